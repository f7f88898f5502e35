// The results map beside the catalogue's list: the footprint (lon/lat extent) of each resource on
// the page over the world's countries. Hovering or focusing a card lights its footprint up, and
// pointing at a footprint lights its cards up.
import Feature from 'ol/Feature.js';
import Map from 'ol/Map.js';
import View from 'ol/View.js';
import { defaults as defaultControls } from 'ol/control/defaults.js';
import VectorLayer from 'ol/layer/Vector.js';
import VectorSource from 'ol/source/Vector.js';
import Fill from 'ol/style/Fill.js';
import Stroke from 'ol/style/Stroke.js';
import Style from 'ol/style/Style.js';
import { boxGeometry } from './antimeridian.js';
import { MAX_RESOLUTION, keepWorldFitted } from './extent.js';
import { countriesLayer } from './world.js';

const FOOTPRINT = new Style({ fill: new Fill({ color: 'rgba(192, 80, 0, 0.25)' }), stroke: new Stroke({ color: '#c05000', width: 1.5 }) });
const HIGHLIGHTED = new Style({ fill: new Fill({ color: 'rgba(192, 80, 0, 0.55)' }), stroke: new Stroke({ color: '#7a2e00', width: 3 }), zIndex: 1 });

let results = null; // { map, source, target, highlighted }

// The lon/lat box of a resource, or null when it has none: the API answers the whole world for a
// resource without an extent, which says nothing about where it is.
function lonLatBox(resource) {
  const coords = resource.extent && resource.extent.coords;
  if (!Array.isArray(coords) || coords.length !== 4 || !coords.every(Number.isFinite)) return null;
  const [west, south, east, north] = coords;
  if (west === -180 && south === -90 && east === 180 && north === 90) return null;
  // Past 180° (a Pacific box reprojected from a local CRS: 170 to 190) or west east of east: it
  // crosses the antimeridian, and is drawn on both edges of the map.
  if (south > north || west < -180 || west > 180 || east < -180 || east > 540 || south < -90 || north > 90) return null;
  return coords;
}

function cardsOf(id) {
  return document.querySelectorAll(`#results .card[data-id="${CSS.escape(id)}"]`);
}

function highlight(id) {
  if (!results || results.highlighted === id) return;
  const previous = results.highlighted;
  results.highlighted = id;
  if (previous !== null) {
    const feature = results.source.getFeatureById(previous);
    if (feature) feature.setStyle(undefined);
    for (const card of cardsOf(previous)) card.classList.remove('highlighted');
  }
  if (id !== null) {
    const feature = results.source.getFeatureById(id);
    if (feature) feature.setStyle(HIGHLIGHTED);
    for (const card of cardsOf(id)) card.classList.add('highlighted');
  }
  results.target.dataset.highlighted = id === null ? '' : id;
}

export function setupResultsMap() {
  const target = document.getElementById('results-map');
  if (!target || results) return;
  const source = new VectorSource();
  const map = new Map({
    target,
    controls: defaultControls({ rotate: false, attributionOptions: { collapsible: false } }),
    layers: [countriesLayer(target.dataset.worldUrl), new VectorLayer({ source, style: FOOTPRINT })],
    view: new View({ projection: 'EPSG:4326', center: [0, 0], zoom: 0, extent: [-180, -90, 180, 90],
      constrainOnlyCenter: true, showFullExtent: true, maxResolution: MAX_RESOLUTION }),
  });
  keepWorldFitted(map);
  map.on('pointermove', (event) => {
    if (event.dragging) return;
    let found = null;
    // The smallest footprint under the pointer: a large one would hide the small ones inside it.
    let area = Infinity;
    map.forEachFeatureAtPixel(event.pixel, (feature) => {
      const size = feature.get('area');
      if (size < area) {
        area = size;
        found = feature.getId();
      }
    }, { layerFilter: (layer) => layer.getSource() === source });
    highlight(found);
  });
  target.addEventListener('pointerleave', () => highlight(null));
  const list = document.getElementById('results');
  const fromCard = (event) => {
    const card = event.target.closest && event.target.closest('.card');
    highlight(card ? card.dataset.id : null);
  };
  list.addEventListener('pointerover', fromCard);
  list.addEventListener('focusin', fromCard);
  list.addEventListener('pointerleave', () => highlight(null));
  list.addEventListener('focusout', (event) => { if (!list.contains(event.relatedTarget)) highlight(null); });
  results = { map, source, target, highlighted: null };
}

// The page's resources, drawn as their footprints (after every search).
export function showFootprints(resources) {
  if (!results) return;
  highlight(null);
  results.source.clear();
  const features = [];
  for (const resource of resources) {
    const box = lonLatBox(resource);
    if (!box) continue;
    const feature = new Feature(boxGeometry(box));
    feature.setId(String(resource.pk));
    const width = box[2] >= box[0] ? box[2] - box[0] : box[2] - box[0] + 360;
    feature.set('area', width * (box[3] - box[1]));
    features.push(feature);
  }
  results.source.addFeatures(features);
  results.target.dataset.footprints = String(features.length);
}
