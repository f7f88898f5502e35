// The catalogue's area filter: a small world map (Natural Earth's countries, served by this
// server, so it works offline; see world.js) on which a box is drawn, or whose current view
// becomes the area.
// The area is the API's `extent` filter (west,south,east,north in degrees).
import Feature from 'ol/Feature.js';
import Map from 'ol/Map.js';
import View from 'ol/View.js';
import { defaults as defaultControls } from 'ol/control/defaults.js';
import { fromExtent } from 'ol/geom/Polygon.js';
import DragBox from 'ol/interaction/DragBox.js';
import VectorLayer from 'ol/layer/Vector.js';
import VectorSource from 'ol/source/Vector.js';
import Fill from 'ol/style/Fill.js';
import Stroke from 'ol/style/Stroke.js';
import Style from 'ol/style/Style.js';
import { countriesLayer } from './world.js';

const WORLD = [-180, -90, 180, 90];
// Degrees per pixel at the widest: OpenLayers' default (the world on 256 pixels) would not let
// a narrow map show the whole world.
export const MAX_RESOLUTION = 360 / 64;

// "w,s,e,n" from the URL, or null when it is not four numbers making a box on the globe.
export function parseExtent(text) {
  if (!text) return null;
  const parts = text.split(',').map(Number);
  if (parts.length !== 4 || !parts.every(Number.isFinite)) return null;
  const [west, south, east, north] = parts;
  if (west >= east || south >= north || west < -180 || east > 180 || south < -90 || north > 90) return null;
  return parts;
}

export function formatExtent(extent) {
  return extent.map((value) => String(Math.round(value * 1e4) / 1e4)).join(',');
}

function clampToWorld([west, south, east, north]) {
  return [Math.max(west, -180), Math.max(south, -90), Math.min(east, 180), Math.min(north, 90)];
}

function degrees(value, positive, negative) {
  return `${Math.abs(Math.round(value * 100) / 100)}°${value < 0 ? negative : positive}`;
}

function describe(extent) {
  if (!extent) return 'No area chosen: resources anywhere are shown.';
  const [west, south, east, north] = extent;
  return `Resources within ${degrees(west, 'E', 'W')} to ${degrees(east, 'E', 'W')}, `
    + `${degrees(south, 'N', 'S')} to ${degrees(north, 'N', 'S')}.`;
}

// The whole world in view, as soon as the map has a size (in a folded filter panel it has none)
// and whenever the page's layout resizes it, until the user pans, zooms or draws on it.
export function keepWorldFitted(map) {
  let moved = false;
  const fit = () => {
    const size = map.getSize();
    if (moved || !size || !size[0] || !size[1]) return;
    map.getView().fit(WORLD, { size });
  };
  fit();
  map.on('change:size', fit);
  const target = map.getTargetElement();
  for (const type of ['pointerdown', 'wheel', 'keydown']) {
    target.addEventListener(type, () => { moved = true; }, { capture: true });
  }
}

let area = null; // { map, box, view, text, clear, draw }

// Builds the map once; `apply(extentText | '')` navigates to the new filter.
export function setupAreaFilter(apply) {
  const target = document.getElementById('area-map');
  if (!target || area) return;
  const box = new VectorSource();
  const view = new View({ projection: 'EPSG:4326', center: [0, 20], zoom: 0, extent: WORLD,
    constrainOnlyCenter: true, showFullExtent: true, maxResolution: MAX_RESOLUTION });
  const map = new Map({
    target,
    controls: defaultControls({ rotate: false, attributionOptions: { collapsible: false } }),
    layers: [
      countriesLayer(target.dataset.worldUrl),
      new VectorLayer({
        source: box,
        style: new Style({ fill: new Fill({ color: 'rgba(11, 83, 148, 0.15)' }),
          stroke: new Stroke({ color: '#0b5394', width: 2 }) }),
      }),
    ],
    view,
  });
  keepWorldFitted(map);
  const draw = document.getElementById('area-draw');
  const dragBox = new DragBox({ condition: () => true, className: 'area-dragbox' });
  dragBox.setActive(false);
  map.addInteraction(dragBox);
  const drawing = (on) => {
    dragBox.setActive(on);
    draw.setAttribute('aria-pressed', String(on));
    target.classList.toggle('drawing', on);
  };
  dragBox.on('boxend', () => {
    drawing(false);
    const drawn = clampToWorld(dragBox.getGeometry().getExtent());
    if (drawn[0] < drawn[2] && drawn[1] < drawn[3]) apply(formatExtent(drawn));
  });
  draw.addEventListener('click', () => drawing(draw.getAttribute('aria-pressed') !== 'true'));
  document.getElementById('area-from-view').addEventListener('click', () => {
    const seen = clampToWorld(view.calculateExtent(map.getSize()));
    apply(formatExtent(seen));
  });
  const clear = document.getElementById('area-clear');
  clear.addEventListener('click', () => apply(''));
  area = { map, box, view, text: document.getElementById('area-text'), clear, drawing };
}

// Shows the filter's area (after any navigation, including back and forward).
export function showArea(extentText) {
  if (!area) return;
  const extent = parseExtent(extentText);
  area.box.clear();
  if (extent) area.box.addFeature(new Feature(fromExtent(extent)));
  area.text.textContent = describe(extent);
  area.clear.disabled = !extent;
  area.map.getTargetElement().dataset.extent = extent ? formatExtent(extent) : '';
}
