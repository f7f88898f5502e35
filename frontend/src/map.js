// The pages' maps (dataset, map and composer): this server's WMS layers over a basemap, with a
// basemap choice, a scale bar, the pointer's coordinates, each layer's legend (WMS
// GetLegendGraphic) and what lies under a click (WMS GetFeatureInfo as JSON).
//
// The basemap works offline: Natural Earth's countries shipped with the pages, drawn as vectors.
// An operator may set an XYZ tile service instead (WEB_BASEMAP_URL, with its attribution); the
// page's CSP then allows that host's images, and only then.
import OlMap from 'ol/Map.js';
import View from 'ol/View.js';
import Attribution from 'ol/control/Attribution.js';
import ScaleLine from 'ol/control/ScaleLine.js';
import Zoom from 'ol/control/Zoom.js';
import { toStringHDMS } from 'ol/coordinate.js';
import TopoJSON from 'ol/format/TopoJSON.js';
import ImageLayer from 'ol/layer/Image.js';
import TileLayer from 'ol/layer/Tile.js';
import VectorLayer from 'ol/layer/Vector.js';
import { fromLonLat, toLonLat, transformExtent } from 'ol/proj.js';
import ImageWMS from 'ol/source/ImageWMS.js';
import VectorSource from 'ol/source/Vector.js';
import XYZ from 'ol/source/XYZ.js';
import Fill from 'ol/style/Fill.js';
import Stroke from 'ol/style/Stroke.js';
import Style from 'ol/style/Style.js';
import { base, getJson } from './api.js';
import { el } from './dom.js';

const WORLD = [-180, -85, 180, 85];
const PADDING = 24; // pixels kept free around fitted data, so it never touches the map's edges
const IDENTIFY_FEATURES = 10;
const OCEAN = '#d6e4ef';
const LAND = new Style({ fill: new Fill({ color: '#f2efe6' }), stroke: new Stroke({ color: '#9aa7b3', width: 0.6 }) });

let countries = null; // one source for the page: the file is read once

// A lon/lat box (west, south, east, north) in the view's projection, clamped to Web Mercator.
export function fitExtent(coords) {
  return transformExtent(
    [Math.max(coords[0], -180), Math.max(coords[1], -85), Math.min(coords[2], 180), Math.min(coords[3], 85)],
    'EPSG:4326', 'EPSG:3857',
  );
}

export function validExtent(coords) {
  return Array.isArray(coords) && coords.length === 4 && coords.every(Number.isFinite)
    && coords[0] <= coords[2] && coords[1] <= coords[3];
}

export function legendUrl(name, style) {
  const params = new URLSearchParams({ service: 'WMS', version: '1.3.0', request: 'GetLegendGraphic',
    format: 'image/png', layer: name });
  if (style) params.set('style', style);
  return `${base}/ows?${params}`;
}

// A WMS layer of this server; `info` ({name, title, style}) is what the legend and identify use.
// `version` (the record's last change) makes the browser fetch a restyled layer again.
export function wmsLayer({ name, title, style, opacity = 1, visible = true, version }) {
  const source = new ImageWMS({
    url: `${base}/ows`,
    params: { LAYERS: name, STYLES: style || '', VERSION: '1.3.0', FORMAT: 'image/png', TRANSPARENT: true,
      ...(version ? { _v: version } : {}) },
    ratio: 1,
  });
  const layer = new ImageLayer({ source, opacity, visible });
  layer.set('info', { name, title: title || name, style: style || '' });
  return layer;
}

export function setLayerStyle(layer, style) {
  layer.set('info', { ...layer.get('info'), style: style || '' });
  layer.getSource().updateParams({ STYLES: style || '' });
}

function countriesLayer(worldUrl) {
  if (!countries) {
    countries = new VectorSource({ format: new TopoJSON(), url: worldUrl,
      attributions: 'Countries: Natural Earth' });
  }
  return new VectorLayer({ source: countries, style: LAND, background: OCEAN, properties: { basemap: 'countries' } });
}

function tilesLayer(url, attribution) {
  return new TileLayer({ source: new XYZ({ url, attributions: attribution || undefined, maxZoom: 19 }),
    properties: { basemap: 'tiles' } });
}

// The basemaps the operator's settings offer, the default first.
function basemaps(config) {
  const choices = [];
  if (config.basemapUrl) choices.push({ id: 'tiles', label: 'Tiles', make: () => tilesLayer(config.basemapUrl, config.basemapAttribution) });
  choices.push({ id: 'countries', label: 'Countries (offline)', make: () => countriesLayer(config.worldUrl) });
  choices.push({ id: 'none', label: 'None', make: () => null });
  return choices;
}

function formatCoordinate(coordinate) {
  if (!coordinate) return '';
  const [lon, lat] = toLonLat(coordinate);
  return `${lat.toFixed(5)}, ${lon.toFixed(5)} (${toStringHDMS([lon, lat])})`;
}

function cell(value) {
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

// The panel below the map: one table of attributes per feature found under the click.
function showIdentified(panel, found) {
  const body = panel.querySelector('.identify-body');
  body.replaceChildren();
  let count = 0;
  for (const { title, features } of found) {
    for (const feature of features) {
      count += 1;
      const table = el('table', { class: 'identify-table' });
      table.append(el('caption', {}, feature.id ? `${title}: ${feature.id}` : title));
      const rows = el('tbody');
      for (const [key, value] of Object.entries(feature.properties || {})) {
        const row = el('tr');
        row.append(el('th', { scope: 'row' }, key), el('td', {}, cell(value)));
        rows.append(row);
      }
      table.append(rows);
      body.append(table);
    }
  }
  if (!count) body.append(el('p', {}, 'Nothing here: click on a feature of the map.'));
  panel.hidden = false;
  panel.setAttribute('data-ready', 'true');
}

// Builds the map in `target` with its bar, legend and identify panel after it (made once per
// target). Layers are added with `setLayers` (bottom first).
export function createMap(target, { label } = {}) {
  const config = {
    worldUrl: target.dataset.worldUrl,
    basemapUrl: target.dataset.basemapUrl || '',
    basemapAttribution: target.dataset.basemapAttribution || '',
  };
  const prefix = target.id;
  let parts = target.parentElement.querySelector(`[data-map-parts="${prefix}"]`);
  if (!parts) {
    parts = el('div', { class: 'map-parts', 'data-map-parts': prefix });
    const bar = el('div', { class: 'map-bar' });
    const scale = el('div', { class: 'map-scale', id: `${prefix}-scale` });
    const coords = el('p', { class: 'map-coords', id: `${prefix}-coords` });
    coords.append(el('span', { class: 'visually-hidden' }, 'Pointer at '), el('span', { class: 'coords-value' }, '—'));
    const choose = el('span', { class: 'map-basemap' });
    const select = el('select', { id: `${prefix}-basemap`, class: 'basemap-select' });
    choose.append(el('label', { for: select.id }, 'Basemap'), select);
    bar.append(scale, coords, choose);
    const attribution = el('div', { class: 'map-attribution', id: `${prefix}-attribution` });
    const legend = el('section', { class: 'map-legend', 'aria-label': 'Legend' });
    legend.append(el('h3', {}, 'Legend'), el('ul', { class: 'legend-list', id: `${prefix}-legend` }));
    const identify = el('section', { class: 'map-identify', id: `${prefix}-identify`, 'aria-live': 'polite',
      'aria-label': 'Features at the clicked point' });
    identify.hidden = true;
    const heading = el('div', { class: 'identify-heading' });
    const close = el('button', { type: 'button', class: 'identify-close' }, 'Close');
    close.addEventListener('click', () => { identify.hidden = true; target.focus(); });
    heading.append(el('h3', {}, 'Features at the clicked point'), close);
    identify.append(heading, el('div', { class: 'identify-body' }));
    parts.append(bar, attribution, legend, identify);
    target.after(parts);
  }
  const select = parts.querySelector('select.basemap-select');
  const coordsValue = parts.querySelector('.coords-value');
  const legendList = parts.querySelector('.legend-list');
  const identify = parts.querySelector('.map-identify');
  identify.hidden = true;
  target.setAttribute('tabindex', '0');
  target.setAttribute('role', 'region');
  if (label) target.setAttribute('aria-label', label);

  const map = new OlMap({
    target,
    layers: [],
    view: new View({ projection: 'EPSG:3857' }),
    controls: [
      new Zoom(),
      new ScaleLine({ target: parts.querySelector('.map-scale'), units: 'metric' }),
      new Attribution({ target: parts.querySelector('.map-attribution'), collapsible: false }),
    ],
  });
  map.on('pointermove', (event) => { coordsValue.textContent = formatCoordinate(event.coordinate); });
  target.addEventListener('mouseleave', () => { coordsValue.textContent = '—'; });

  let basemap = null;
  const choices = basemaps(config);
  select.replaceChildren(...choices.map((c) => el('option', { value: c.id }, c.label)));
  const useBasemap = (id) => {
    if (basemap) map.removeLayer(basemap);
    const choice = choices.find((c) => c.id === id) || choices[0];
    basemap = choice.make();
    if (basemap) map.getLayers().insertAt(0, basemap);
    target.dataset.basemap = choice.id;
    select.value = choice.id;
  };
  select.onchange = () => useBasemap(select.value);
  useBasemap(choices[0].id);
  if (countries) {
    const loaded = () => { target.dataset.basemapLoaded = 'true'; };
    if (countries.getState() === 'ready' && countries.getFeatures().length) loaded();
    countries.on('featuresloadend', loaded);
  }

  let dataLayers = [];
  const refreshLegend = () => {
    const items = [...dataLayers].reverse().filter((l) => l.getVisible()).map((l) => {
      const info = l.get('info');
      const item = el('li', { 'data-layer': info.name });
      item.append(el('span', { class: 'legend-title' }, info.title));
      item.append(el('img', { src: legendUrl(info.name, info.style), alt: `Legend of ${info.title}`, class: 'legend-image' }));
      return item;
    });
    legendList.replaceChildren(...items);
    if (!items.length) legendList.append(el('li', {}, 'No visible layers.'));
  };

  map.on('singleclick', async (event) => {
    const resolution = map.getView().getResolution();
    const queried = [...dataLayers].reverse().filter((l) => l.getVisible());
    identify.removeAttribute('data-ready');
    const found = await Promise.all(queried.map(async (layer) => {
      const url = layer.getSource().getFeatureInfoUrl(event.coordinate, resolution, 'EPSG:3857',
        { INFO_FORMAT: 'application/json', FEATURE_COUNT: IDENTIFY_FEATURES });
      try {
        const data = await getJson(url);
        return { title: layer.get('info').title, features: data.features || [] };
      } catch {
        return { title: layer.get('info').title, features: [] };
      }
    }));
    showIdentified(identify, found);
  });

  return {
    map,
    setLayers(layers) {
      for (const layer of dataLayers) map.removeLayer(layer);
      dataLayers = [...layers];
      for (const layer of dataLayers) map.addLayer(layer);
      refreshLegend();
    },
    refreshLegend,
    fit(coords, maxZoom = 16) {
      map.updateSize();
      const size = map.getSize();
      const extent = validExtent(coords) ? coords : WORLD;
      map.getView().fit(fitExtent(extent), { size, padding: [PADDING, PADDING, PADDING, PADDING], maxZoom });
    },
    // The view as a map's configuration keeps it (MapStore's center and zoom, in lon/lat).
    getView() {
      const view = map.getView();
      const [x, y] = toLonLat(view.getCenter());
      return { center: { x, y, crs: 'EPSG:4326' }, zoom: view.getZoom(), projection: 'EPSG:3857' };
    },
    setView(saved) {
      const center = saved && saved.center;
      if (!center || !Number.isFinite(center.x) || !Number.isFinite(center.y) || !Number.isFinite(saved.zoom)) return false;
      map.updateSize();
      const point = center.crs && center.crs !== 'EPSG:4326' ? [center.x, center.y] : fromLonLat([center.x, center.y]);
      map.getView().setCenter(point);
      map.getView().setZoom(saved.zoom);
      return true;
    },
    extent() {
      const size = map.getSize();
      return size ? map.getView().calculateExtent(size) : null;
    },
    dispose() {
      map.setTarget(null);
    },
  };
}
