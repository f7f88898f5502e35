// Resource pages (#/dataset/1, #/document/2 ...): metadata, thumbnail, links, the map preview
// through the built-in WMS and the attribute table through its WFS.
import { api, base, getJson } from './api.js';
import { el, safeUrl } from './dom.js';
import { hideEditing, setupEditing } from './editing.js';
import { createMap, wmsLayer } from './map.js';
import { describeResource, showDownloads, showFeatureCount, showServices } from './resource_meta.js';

let resourceMap = null;
let resourceSerial = 0;

export function resourceRoute() {
  const match = /^#\/(\w+)\/(\d+)\/?$/.exec(window.location.hash);
  return match ? { kind: match[1], id: match[2] } : null;
}

// Draws WMS layers ({name, title, style, opacity, visible, version}, bottom first) over the
// basemap, fitted to `coords` (lon/lat) or showing a map's saved `view`.
function drawLayers(layers, coords, view) {
  const figure = document.getElementById('resource-figure');
  const target = document.getElementById('resource-map');
  figure.hidden = false;
  let pending = layers.filter((l) => l.visible).length;
  if (!pending) target.setAttribute('data-loaded', 'true');
  const olLayers = layers.map((layer) => {
    const olLayer = wmsLayer(layer);
    const source = olLayer.getSource();
    let counted = false;
    source.on('imageloadend', () => {
      if (!counted) { counted = true; pending -= 1; }
      if (pending <= 0) target.setAttribute('data-loaded', 'true');
    });
    source.on('imageloaderror', () => target.setAttribute('data-loaded', 'error'));
    return olLayer;
  });
  if (resourceMap) resourceMap.dispose();
  resourceMap = createMap(target, { label: target.getAttribute('aria-label') });
  resourceMap.setLayers(olLayers);
  if (!view || !resourceMap.setView(view)) resourceMap.fit(coords);
  const extent = resourceMap.extent();
  if (extent) target.dataset.extent = JSON.stringify(extent);
}

function showMap(resource) {
  if (resource.resource_type !== 'dataset' || !resource.alternate) return;
  document.getElementById('resource-map').setAttribute('aria-label', `Map of ${resource.title || 'the dataset'}`);
  drawLayers([{ name: resource.alternate, title: resource.title, opacity: 1, visible: true,
    version: resource.last_updated }], resource.extent && resource.extent.coords);
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
    style: l.current_style || '',
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
  drawLayers(layers, coords, record.data && record.data.map);
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
// The table's query: sort column and direction, and the filter (CQL), kept across pages.
let table = { resource: null, sort: null, descending: false, filter: '' };

// A quoted CQL literal: a number as is, text in single quotes (a quote doubled).
function literal(value) {
  const text = value.trim();
  return /^-?\d+(\.\d+)?$/.test(text) ? text : `'${text.replace(/'/g, "''")}'`;
}

export function cqlFilter(column, operator, value) {
  if (!column || !value.trim()) return '';
  const name = /^[A-Za-z_][A-Za-z0-9_]*$/.test(column) ? column : `"${column.replace(/"/g, '""')}"`;
  if (operator === 'contains') {
    const escaped = value.trim().replace(/'/g, "''").replace(/[%_\\]/g, '');
    return `${name} ILIKE '%${escaped}%'`;
  }
  return `${name} ${operator} ${literal(value)}`;
}

function sortButton(column) {
  const sorted = table.sort === column;
  // The direction shows through the header's aria-sort (and an arrow drawn by the style sheet).
  const button = el('button', { type: 'button', class: 'sort-button', 'data-column': column }, column);
  button.addEventListener('click', () => {
    table.descending = sorted ? !table.descending : false;
    table.sort = column;
    showAttributes(table.resource, 0, column);
  });
  return button;
}

// A vector dataset's attributes, a page at a time through the server's WFS (GeoJSON), sorted
// (SORTBY) and filtered (CQL_FILTER) by the server.
async function showAttributes(resource, start, focusColumn) {
  const section = document.getElementById('attributes');
  const serial = ++attributeSerial;
  table.resource = resource;
  const params = new URLSearchParams({
    service: 'WFS', version: '2.0.0', request: 'GetFeature', typeNames: resource.alternate,
    outputFormat: 'application/json', count: String(ROWS), startIndex: String(start),
  });
  if (table.sort) params.set('sortBy', `${table.sort} ${table.descending ? 'DESC' : 'ASC'}`);
  if (table.filter) params.set('CQL_FILTER', table.filter);
  const error = document.getElementById('rows-error');
  let data;
  try {
    data = await getJson(`${base}/ows?${params}`);
  } catch (failure) {
    if (serial !== attributeSerial) return;
    if (table.filter || table.sort) {
      error.textContent = `The rows could not be read with this filter (${failure.message}).`;
    } else {
      section.hidden = true;
    }
    return;
  }
  if (serial !== attributeSerial) return;
  error.textContent = '';
  const features = data.features || [];
  if (!table.columns || !table.columns.length) {
    const columns = [];
    for (const feature of features) {
      for (const key of Object.keys(feature.properties || {})) if (!columns.includes(key)) columns.push(key);
    }
    table.columns = columns;
    const select = document.getElementById('filter-column');
    select.replaceChildren(...columns.map((c) => el('option', { value: c }, c)));
  }
  const columns = table.columns;
  const node = document.getElementById('attribute-table');
  const headRow = el('tr');
  for (const column of columns) {
    const sorted = table.sort === column;
    const th = el('th', { scope: 'col', 'aria-sort': sorted ? (table.descending ? 'descending' : 'ascending') : 'none' });
    th.append(sortButton(column));
    headRow.append(th);
  }
  node.tHead.replaceChildren(headRow);
  const body = node.tBodies[0];
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
  if (total !== null && !table.filter) showFeatureCount(document.getElementById('resource-metadata'), total);
  const info = document.getElementById('rows-info');
  info.textContent = features.length
    ? `Rows ${start + 1}–${start + features.length}${total !== null ? ` of ${total}` : ''}` : 'No rows';
  const prev = document.getElementById('rows-prev');
  const next = document.getElementById('rows-next');
  prev.disabled = start === 0;
  next.disabled = total !== null ? start + features.length >= total : features.length < ROWS;
  prev.onclick = () => showAttributes(resource, Math.max(0, start - ROWS));
  next.onclick = () => showAttributes(resource, start + ROWS);
  if (focusColumn) {
    const button = node.tHead.querySelector(`button[data-column="${CSS.escape(focusColumn)}"]`);
    if (button) button.focus();
  }
  section.hidden = false;
  section.setAttribute('data-ready', 'true');
  section.dataset.query = params.toString();
}

function setupRowsFilter() {
  const form = document.getElementById('rows-filter');
  if (form.dataset.bound) return;
  form.dataset.bound = 'true';
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    table.filter = cqlFilter(form.elements.column.value, form.elements.operator.value, form.elements.value.value);
    showAttributes(table.resource, 0);
  });
  document.getElementById('filter-clear').addEventListener('click', () => {
    form.elements.value.value = '';
    table.filter = '';
    showAttributes(table.resource, 0);
  });
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
  document.getElementById('download-menu').hidden = true;
  document.getElementById('services').hidden = true;
  table = { resource: null, sort: null, descending: false, filter: '', columns: null };
  document.getElementById('rows-error').textContent = '';
  document.getElementById('filter-value').value = '';
  document.getElementById('resource-figure').hidden = true;
  document.getElementById('resource-map').removeAttribute('data-loaded');
  for (const id of ['map-layers-section', 'document-view', 'linked-resources']) {
    document.getElementById(id).hidden = true;
    document.getElementById(id).removeAttribute('data-ready');
  }
  hideEditing();
  const editMap = document.getElementById('edit-map');
  if (editMap) editMap.remove();
  document.getElementById('thumbnail-figure').hidden = true;
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
  let dataset = null;
  if (resource.resource_type === 'dataset') {
    try {
      dataset = (await getJson(api(`datasets/${Number(resource.pk)}`))).dataset;
    } catch { /* the panel shows what the resource's record has */ }
    if (serial !== resourceSerial) return;
  }
  describeResource(meta, resource, dataset);
  showDownloads(resource);
  showServices(resource);
  for (const keyword of resource.keywords || []) keywords.append(el('li', {}, keyword.name));
  const thumb = safeUrl(resource.thumbnail_url);
  if (thumb) {
    thumbnail.setAttribute('src', thumb);
    thumbnail.setAttribute('alt', `Thumbnail of ${resource.title || 'the resource'}`);
    thumbnail.onerror = () => { document.getElementById('thumbnail-figure').hidden = true; };
    // A dataset's thumbnail repeats its map: shown for the other kinds only.
    document.getElementById('thumbnail-figure').hidden = resource.resource_type === 'dataset';
  }
  const seen = new Set();
  for (const link of resource.links || []) {
    const kind = link.link_type || '';
    if (kind === 'data' || kind === 'original' || kind.startsWith('OGC:')) continue; // in the menus above
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
    setupRowsFilter();
    showAttributes(resource, 0);
  }
  view.setAttribute('data-ready', 'true');
}
