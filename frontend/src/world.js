// The catalogue's offline base map: Natural Earth's countries (served by this server), read once
// and shared by the area filter's map and the results map, with the countries that cross the
// antimeridian cut so that they draw on both edges of the map.
import TopoJSON from 'ol/format/TopoJSON.js';
import VectorLayer from 'ol/layer/Vector.js';
import VectorSource from 'ol/source/Vector.js';
import Fill from 'ol/style/Fill.js';
import Stroke from 'ol/style/Stroke.js';
import Style from 'ol/style/Style.js';
import { wrapGeometry } from './antimeridian.js';

const COUNTRY_STYLE = new Style({ fill: new Fill({ color: '#e8eef3' }), stroke: new Stroke({ color: '#8da2b5', width: 0.5 }) });
const sources = new Map();

function countriesSource(url) {
  if (!sources.has(url)) {
    const source = new VectorSource();
    fetch(url, { credentials: 'same-origin' })
      .then((response) => (response.ok ? response.json() : Promise.reject(new Error(`HTTP ${response.status}`))))
      .then((topology) => {
        const features = new TopoJSON({ layers: ['countries'] }).readFeatures(topology);
        for (const feature of features) feature.setGeometry(wrapGeometry(feature.getGeometry()));
        source.addFeatures(features);
      })
      // Without their base map, the maps still show the area and the footprints.
      .catch(() => {});
    sources.set(url, source);
  }
  return sources.get(url);
}

// A layer of the world's countries from the TopoJSON at `url`.
export function countriesLayer(url) {
  return new VectorLayer({ source: countriesSource(url), style: COUNTRY_STYLE });
}
