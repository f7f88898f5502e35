// Resource pages (#/dataset/1, #/document/2 ...): metadata, thumbnail, links, the map preview
// through the built-in WMS and the attribute table through its WFS.
import Map from 'ol/Map.js';
import View from 'ol/View.js';
import ImageLayer from 'ol/layer/Image.js';
import ImageWMS from 'ol/source/ImageWMS.js';
import { transformExtent } from 'ol/proj.js';
import { defaults as defaultControls } from 'ol/control/defaults.js';
import { api, base, getJson } from './api.js';
import { el, safeUrl } from './dom.js';
import { hideEditing, setupEditing } from './editing.js';

let resourceMap = null;
let resourceSerial = 0;

export function resourceRoute() {
  const match = /^#\/(\w+)\/(\d+)\/?$/.exec(window.location.hash);
  return match ? { kind: match[1], id: match[2] } : null;
}

function addMeta(list, term, value) {
  if (value === undefined || value === null || value === '') return;
  list.append(el('dt', {}, term), el('dd', {}, value));
}

export function fitExtent(coords) {
  return transformExtent(
    [Math.max(coords[0], -180), Math.max(coords[1], -85), Math.min(coords[2], 180), Math.min(coords[3], 85)],
    'EPSG:4326', 'EPSG:3857',
  );
}

// Draws WMS layers ({name, opacity, visible}, bottom first) into the preview.
function drawLayers(layers, coords) {
  const figure = document.getElementById('resource-figure');
  const target = document.getElementById('resource-map');
  figure.hidden = false;
  let pending = layers.filter((l) => l.visible).length;
  if (!pending) target.setAttribute('data-loaded', 'true');
  const olLayers = layers.map((layer) => {
    const source = new ImageWMS({
      url: `${base}/ows`,
      // `_v` (the record's last change) makes the browser fetch a restyled layer again.
      params: { LAYERS: layer.name, VERSION: '1.3.0', FORMAT: 'image/png', TRANSPARENT: true,
        ...(layer.version ? { _v: layer.version } : {}) },
      ratio: 1,
    });
    let counted = false;
    source.on('imageloadend', () => {
      if (!counted) { counted = true; pending -= 1; }
      if (pending <= 0) target.setAttribute('data-loaded', 'true');
    });
    source.on('imageloaderror', () => target.setAttribute('data-loaded', 'error'));
    return new ImageLayer({ source, opacity: layer.opacity, visible: layer.visible });
  });
  if (resourceMap) resourceMap.setTarget(null);
  resourceMap = new Map({
    target,
    layers: olLayers,
    view: new View({ projection: 'EPSG:3857' }),
    controls: defaultControls({ attribution: false, rotate: false }),
  });
  const extent = coords && coords.length === 4 ? coords : [-180, -85, 180, 85];
  resourceMap.getView().fit(fitExtent(extent), { size: resourceMap.getSize() });
  const size = resourceMap.getSize();
  if (size) target.dataset.extent = JSON.stringify(resourceMap.getView().calculateExtent(size));
}

function showMap(resource) {
  if (resource.resource_type !== 'dataset' || !resource.alternate) return;
  document.getElementById('resource-map').setAttribute('aria-label', `Map of ${resource.title || 'the dataset'}`);
  drawLayers([{ name: resource.alternate, opacity: 1, visible: true, version: resource.last_updated }],
    resource.extent && resource.extent.coords);
}

// A map's layers, in their order, each with its opacity and visibility.
async function showMapLayers(resource, serial) {
  let record;
  try {
    record = (await getJson(api(`maps/${resource.pk}`))).map;
  } catch {
    return;
  }
  if (serial !== resourceSerial || !record) return;
  const layers = [...(record.maplayers || [])].sort((a, b) => (a.order ?? 0) - (b.order ?? 0)).map((l) => ({
    name: (l.dataset && l.dataset.alternate) || l.name,
    title: (l.dataset && l.dataset.title) || l.name,
    opacity: typeof l.opacity === 'number' ? l.opacity : 1,
    visible: l.visibility !== false,
  })).filter((l) => l.name);
  const list = document.getElementById('map-layers');
  list.replaceChildren();
  for (const layer of layers) {
    const item = el('li', { 'data-layer': layer.name });
    item.append(el('span', { class: 'layer-title' }, layer.title),
      document.createTextNode(` · opacity ${Math.round(layer.opacity * 100)} %${layer.visible ? '' : ' · hidden'}`));
    list.append(item);
  }
  document.getElementById('map-layers-section').hidden = layers.length === 0;
  document.getElementById('resource-map').setAttribute('aria-label', `Map ${resource.title || ''}`.trim());
  const coords = resource.extent && resource.extent.coords;
  drawLayers(layers, coords);
  document.getElementById('map-layers-section').setAttribute('data-ready', 'true');
}

// A document shown inline when the browser can (images, PDF, text), else a download link.
async function showDocument(resource, serial) {
  let record = resource;
  try {
    record = (await getJson(api(`documents/${resource.pk}`))).document || resource;
  } catch { /* the resource's own record has the download link */ }
  if (serial !== resourceSerial) return;
  resource = record; // eslint-disable-line no-param-reassign
  const section = document.getElementById('document-view');
  const slot = document.getElementById('document-content');
  slot.replaceChildren();
  const href = safeUrl(resource.href);
  const download = safeUrl(resource.download_url) || href;
  const mime = resource.mime_type || '';
  const sameSite = href && new URL(href).origin === window.location.origin;
  const name = resource.title || 'the document';
  if (href && /^image\/(png|jpeg|gif)$/.test(mime)) {
    slot.append(el('img', { src: href, alt: `The document ${name}`, class: 'document-image' }));
  } else if (href && sameSite && (mime === 'application/pdf' || mime === 'text/plain')) {
    slot.append(el('iframe', { src: href, title: `The document ${name}`, class: 'document-frame' }));
  }
  if (download) {
    const para = el('p');
    para.append(el('a', { href: download, id: 'document-download' }, `Download ${name}`));
    if (resource.extension) para.append(document.createTextNode(` (${resource.extension})`));
    slot.append(para);
  }
  section.hidden = !slot.childElementCount;
  section.setAttribute('data-ready', 'true');
}

// The resources this one links to and those linking to it.
async function showLinked(resource, serial) {
  const section = document.getElementById('linked-resources');
  const list = document.getElementById('linked-list');
  list.replaceChildren();
  let data;
  try {
    data = await getJson(api(`resources/${resource.pk}/linked_resources`));
  } catch {
    return;
  }
  if (serial !== resourceSerial) return;
  const entries = [...(data.linked_to || []).map((r) => ['Links to', r]), ...(data.linked_by || []).map((r) => ['Linked from', r])];
  for (const [relation, other] of entries) {
    const item = el('li', { 'data-relation': relation === 'Links to' ? 'to' : 'by' });
    item.append(document.createTextNode(`${relation} ${other.resource_type || 'resource'}: `));
    const href = safeUrl(other.detail_url);
    item.append(href ? el('a', { href, class: 'linked-link' }, other.title || href) : el('span', {}, other.title));
    list.append(item);
  }
  if (!entries.length) list.append(el('li', {}, 'No linked resources.'));
  section.hidden = false;
  section.setAttribute('data-ready', 'true');
}

const ROWS = 10;
let attributeSerial = 0;

// A vector dataset's attributes, a page at a time through the server's WFS (GeoJSON).
async function showAttributes(resource, start) {
  const section = document.getElementById('attributes');
  const serial = ++attributeSerial;
  const params = new URLSearchParams({
    service: 'WFS', version: '2.0.0', request: 'GetFeature', typeNames: resource.alternate,
    outputFormat: 'application/json', count: String(ROWS), startIndex: String(start),
  });
  let data;
  try {
    data = await getJson(`${base}/ows?${params}`);
  } catch {
    if (serial === attributeSerial) section.hidden = true;
    return;
  }
  if (serial !== attributeSerial) return;
  const features = data.features || [];
  const columns = [];
  for (const feature of features) {
    for (const key of Object.keys(feature.properties || {})) if (!columns.includes(key)) columns.push(key);
  }
  const table = document.getElementById('attribute-table');
  const headRow = el('tr');
  for (const column of columns) headRow.append(el('th', { scope: 'col' }, column));
  table.tHead.replaceChildren(headRow);
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const feature of features) {
    const row = el('tr');
    for (const column of columns) {
      const value = (feature.properties || {})[column];
      row.append(el('td', {}, value === null || value === undefined ? '' : String(value)));
    }
    body.append(row);
  }
  const total = Number.isInteger(data.numberMatched) ? data.numberMatched : null;
  const info = document.getElementById('rows-info');
  info.textContent = features.length
    ? `Rows ${start + 1}–${start + features.length}${total !== null ? ` of ${total}` : ''}` : 'No rows';
  const prev = document.getElementById('rows-prev');
  const next = document.getElementById('rows-next');
  prev.disabled = start === 0;
  next.disabled = total !== null ? start + features.length >= total : features.length < ROWS;
  prev.onclick = () => showAttributes(resource, Math.max(0, start - ROWS));
  next.onclick = () => showAttributes(resource, start + ROWS);
  section.hidden = false;
  section.setAttribute('data-ready', 'true');
}

export async function showResource(route) {
  document.getElementById('search-view').hidden = true;
  const view = document.getElementById('resource-view');
  view.hidden = false;
  view.removeAttribute('data-ready');
  const title = document.getElementById('resource-title');
  const error = document.getElementById('resource-error');
  const meta = document.getElementById('resource-metadata');
  const keywords = document.getElementById('resource-keywords');
  const links = document.getElementById('resource-links');
  const thumbnail = document.getElementById('resource-thumbnail');
  for (const node of [meta, keywords, links]) node.replaceChildren();
  document.getElementById('resource-figure').hidden = true;
  document.getElementById('resource-map').removeAttribute('data-loaded');
  for (const id of ['map-layers-section', 'document-view', 'linked-resources']) {
    document.getElementById(id).hidden = true;
    document.getElementById(id).removeAttribute('data-ready');
  }
  hideEditing();
  const editMap = document.getElementById('edit-map');
  if (editMap) editMap.remove();
  thumbnail.hidden = true;
  error.hidden = true;
  attributeSerial += 1;
  document.getElementById('attributes').hidden = true;
  document.getElementById('attributes').removeAttribute('data-ready');
  title.textContent = 'Loading…';
  document.getElementById('resource-abstract').textContent = '';
  const serial = ++resourceSerial;
  let resource;
  try {
    resource = (await getJson(api(`resources/${route.id}`))).resource;
    if (serial !== resourceSerial) return; // another resource was asked for meanwhile
  } catch (failure) {
    if (serial !== resourceSerial) return;
    title.textContent = 'Resource not available';
    error.textContent = failure.status === 404 || failure.status === 403
      ? 'This resource does not exist or you may not see it.'
      : `The resource could not be loaded (${failure.message}).`;
    error.hidden = false;
    document.title = 'Resource not available · Cartotheca';
    view.setAttribute('data-ready', 'true');
    return;
  }
  title.textContent = resource.title || '(untitled)';
  document.title = `${resource.title || 'Resource'} · Cartotheca`;
  document.getElementById('resource-abstract').textContent = resource.abstract || '';
  addMeta(meta, 'Type', resource.subtype ? `${resource.resource_type} (${resource.subtype})` : resource.resource_type);
  addMeta(meta, 'Owner', resource.owner && resource.owner.username);
  addMeta(meta, 'Category', resource.category && (resource.category.gn_description || resource.category.identifier));
  addMeta(meta, 'Date', resource.date && resource.date.slice(0, 10));
  addMeta(meta, 'License', resource.license && resource.license.identifier);
  addMeta(meta, 'Regions', (resource.regions || []).map((r) => r.name).join(', '));
  addMeta(meta, 'Layer name', resource.alternate);
  for (const keyword of resource.keywords || []) keywords.append(el('li', {}, keyword.name));
  const thumb = safeUrl(resource.thumbnail_url);
  if (thumb) {
    thumbnail.setAttribute('src', thumb);
    thumbnail.setAttribute('alt', `Thumbnail of ${resource.title || 'the resource'}`);
    thumbnail.onerror = () => { thumbnail.hidden = true; };
    thumbnail.hidden = false;
  }
  const seen = new Set();
  for (const link of resource.links || []) {
    const href = safeUrl(link.url);
    if (!href || seen.has(link.url)) continue;
    seen.add(link.url);
    const item = el('li');
    if (link.url.includes('{')) {
      // A URL template (tiles {z}/{x}/{y}) is for map clients: shown, not followed.
      item.append(document.createTextNode(`${link.name || link.link_type}: `), el('code', {}, link.url));
      links.append(item);
      continue;
    }
    item.append(el('a', { href, class: 'resource-link', 'data-link-type': link.link_type }, link.name || href));
    if (link.extension) item.append(document.createTextNode(` (${link.extension})`));
    links.append(item);
  }
  showMap(resource);
  if (resource.resource_type === 'map') showMapLayers(resource, serial);
  if (resource.resource_type === 'document') showDocument(resource, serial);
  showLinked(resource, serial);
  setupEditing(resource, () => showResource(route));
  if (resource.resource_type === 'map' && (resource.perms || []).includes('change_resourcebase')) {
    const para = el('p', { id: 'edit-map' });
    para.append(el('a', { href: `${base}/maps/${Number(resource.pk)}/edit`, id: 'edit-map-link' }, 'Edit map'));
    title.after(para);
  }
  if (resource.resource_type === 'dataset' && resource.alternate && resource.subtype !== 'raster') {
    showAttributes(resource, 0);
  }
  view.setAttribute('data-ready', 'true');
}
