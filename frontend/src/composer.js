// The map composer (/maps/new, /maps/{id}/edit): datasets found through the public API become
// layers whose order, opacity and visibility are previewed live through the built-in WMS, then
// saved as a map resource with its maplayers (POST /api/v2/maps, or PATCH of the edited map).
import { api, base, failureText, getJson, send } from './api.js';
import { el, safeUrl } from './dom.js';
import { createMap, setLayerStyle, validExtent, wmsLayer } from './map.js';

const RESULTS = 10;
const CHANGE = 'change_resourcebase'; // what PATCHing a map's layers requires

// The layers, top first (the list's order); each {key, dataset, name, title, opacity, visible,
// style, styles, pk, extent, olLayer}: style is the chosen one of the dataset's styles ('' for its
// default). pk is the map layer's id when editing, so the API keeps the row.
let layers = [];
let nextKey = 0;
let preview = null; // the map module's handle
let editing = null; // the map record being edited, or null for a new map
let searchSerial = 0;

function byId(id) {
  return document.getElementById(id);
}

function showAlert(id, text) {
  const node = byId(id);
  node.textContent = text;
  node.hidden = !text;
}

function announce(text) {
  byId('layer-status').textContent = text;
}

// A control's visible word with the layer's title after it for screen readers ("Move up Rivers").
function named(tag, attrs, word, title) {
  const node = el(tag, attrs, word);
  node.append(el('span', { class: 'visually-hidden' }, ` ${title}`));
  return node;
}

// -- the preview -------------------------------------------------------------------------

// Every change asks for a render, so 'rendercomplete' follows even if nothing else moved.
function markStale() {
  byId('composer-map').removeAttribute('data-rendered');
  if (preview) preview.map.render();
}

function setupPreview() {
  const target = byId('composer-map');
  preview = createMap(target, { label: 'Preview of the map' });
  // The tests read where the view is and when every image is drawn.
  preview.map.on('rendercomplete', () => {
    const extent = preview.extent();
    if (extent) target.dataset.extent = JSON.stringify(extent);
    target.setAttribute('data-rendered', 'true');
  });
}

// OpenLayers draws its layers bottom first: the list reversed.
function syncPreview() {
  preview.setLayers([...layers].reverse().filter((l) => l.olLayer).map((l) => l.olLayer));
  markStale();
}

function unionExtent() {
  const boxes = layers.map((l) => l.extent).filter(validExtent);
  if (!boxes.length) return null;
  return [Math.min(...boxes.map((b) => b[0])), Math.min(...boxes.map((b) => b[1])),
    Math.max(...boxes.map((b) => b[2])), Math.max(...boxes.map((b) => b[3]))];
}

function fitPreview(coords) {
  preview.fit(coords || unionExtent());
  markStale();
}

// -- the layer list ----------------------------------------------------------------------

function focusControl(layer, action) {
  const item = byId('layer-list').querySelector(`li[data-key="${layer.key}"]`);
  if (!item) return;
  const wanted = item.querySelector(`[data-action="${action}"]`);
  // A move button is disabled at the end of the list: the other one keeps the focus in place.
  const target = wanted && !wanted.disabled ? wanted : item.querySelector('[data-action^="move"]:not(:disabled)');
  (target || item.querySelector('[data-action="remove"]')).focus();
}

function move(layer, step, action) {
  const from = layers.indexOf(layer);
  const to = from + step;
  if (from < 0 || to < 0 || to >= layers.length) return;
  layers.splice(from, 1);
  layers.splice(to, 0, layer);
  renderLayers();
  syncPreview();
  focusControl(layer, action);
  announce(`${layer.title} moved ${step < 0 ? 'up' : 'down'}: layer ${to + 1} of ${layers.length}.`);
}

function removeLayer(layer) {
  const index = layers.indexOf(layer);
  layers.splice(index, 1);
  renderLayers();
  syncPreview();
  refreshResults();
  const neighbour = layers[Math.min(index, layers.length - 1)];
  if (neighbour) focusControl(neighbour, 'remove');
  else byId('dataset-query').focus();
  announce(`${layer.title} removed.`);
}

function moveButton(layer, action, word, disabled, step) {
  const button = named('button', { type: 'button', class: 'layer-move', 'data-action': action }, word, layer.title);
  button.disabled = disabled;
  button.addEventListener('click', () => move(layer, step, action));
  return button;
}

function opacityControl(layer) {
  const id = `layer-${layer.key}-opacity`;
  const input = el('input', { type: 'range', id, min: 0, max: 100, step: 5, class: 'layer-opacity',
    'data-action': 'opacity' });
  input.value = String(Math.round(layer.opacity * 100));
  const output = el('output', { for: id, class: 'opacity-value' }, `${input.value} %`);
  input.setAttribute('aria-valuetext', `${input.value} %`);
  input.addEventListener('input', () => {
    layer.opacity = Number(input.value) / 100;
    output.textContent = `${input.value} %`;
    input.setAttribute('aria-valuetext', `${input.value} %`);
    if (layer.olLayer) layer.olLayer.setOpacity(layer.opacity);
    markStale();
  });
  const group = el('span', { class: 'layer-field' });
  group.append(named('label', { for: id }, 'Opacity', `of ${layer.title}`), input, output);
  return group;
}

function visibilityControl(layer) {
  const id = `layer-${layer.key}-visible`;
  const input = el('input', { type: 'checkbox', id, class: 'layer-visible', 'data-action': 'visible' });
  input.checked = layer.visible;
  input.addEventListener('change', () => {
    layer.visible = input.checked;
    if (layer.olLayer) layer.olLayer.setVisible(layer.visible);
    preview.refreshLegend();
    markStale();
  });
  const group = el('span', { class: 'layer-field' });
  group.append(input, named('label', { for: id }, 'Visible', layer.title));
  return group;
}

// The dataset's styles, its default first (chosen as '': the map follows a change of default);
// the map layer keeps the one chosen.
function styleControl(layer) {
  const id = `layer-${layer.key}-style`;
  const select = el('select', { id, class: 'layer-style', 'data-action': 'style' });
  const styles = layer.styles || [];
  const fullName = (style) => (style.workspace ? `${style.workspace}:${style.name}` : style.name);
  const defaultName = layer.defaultStyle ? fullName(layer.defaultStyle) : (styles[0] && fullName(styles[0]));
  const label = (style) => style.sld_title || style.name;
  const first = styles.find((s) => fullName(s) === defaultName);
  select.append(el('option', { value: '' }, first ? `${label(first)} (default)` : 'Default style'));
  for (const style of styles) {
    if (fullName(style) !== defaultName) select.append(el('option', { value: fullName(style) }, label(style)));
  }
  if (layer.style && ![...select.options].some((o) => o.value === layer.style)) {
    select.append(el('option', { value: layer.style }, layer.style));
  }
  select.value = layer.style || '';
  select.addEventListener('change', () => {
    layer.style = select.value;
    if (layer.olLayer) setLayerStyle(layer.olLayer, layer.style);
    preview.refreshLegend();
    markStale();
  });
  const group = el('span', { class: 'layer-field' });
  group.append(named('label', { for: id }, 'Style', `of ${layer.title}`), select);
  return group;
}

function layerItem(layer, index) {
  const item = el('li', { class: 'layer-item', 'data-key': layer.key, 'data-layer': layer.name || '' });
  const heading = el('span', { class: 'layer-heading' });
  heading.append(el('span', { class: 'layer-title' }, layer.title));
  if (!layer.name) heading.append(el('span', { class: 'kind' }, ' (its dataset was deleted; not drawn)'));
  const controls = el('div', { class: 'layer-controls' });
  const remove = named('button', { type: 'button', class: 'layer-remove', 'data-action': 'remove' }, 'Remove', layer.title);
  remove.addEventListener('click', () => removeLayer(layer));
  controls.append(
    ...(layer.name ? [styleControl(layer)] : []),
    moveButton(layer, 'move-up', 'Move up', index === 0, -1),
    moveButton(layer, 'move-down', 'Move down', index === layers.length - 1, 1),
    opacityControl(layer),
    visibilityControl(layer),
    remove,
  );
  item.append(heading, controls);
  return item;
}

function renderLayers() {
  byId('layer-list').replaceChildren(...layers.map(layerItem));
  byId('layers-empty').hidden = layers.length > 0;
}

function newLayer(fields) {
  const layer = { key: ++nextKey, opacity: 1, visible: true, pk: null, extent: null, style: '', styles: [], ...fields };
  layer.olLayer = layer.name ? wmsLayer(layer) : null;
  return layer;
}

function addDataset(dataset) {
  const title = dataset.title || dataset.alternate;
  const layer = newLayer({ dataset: Number(dataset.pk), name: dataset.alternate, title,
    extent: dataset.extent && dataset.extent.coords, styles: dataset.styles || [],
    defaultStyle: dataset.default_style || null });
  layers.unshift(layer); // a new layer goes on top, as in every layer panel
  renderLayers();
  syncPreview();
  fitPreview();
  refreshResults();
  announce(`${title} added on top: layer 1 of ${layers.length}.`);
}

// -- the dataset search ------------------------------------------------------------------

function inMap(pk) {
  return layers.some((l) => l.dataset === Number(pk));
}

// An added dataset's button stays focusable (aria-disabled), so the keyboard focus stays put.
function refreshResults() {
  for (const button of byId('dataset-results').querySelectorAll('button.add-layer')) {
    const added = inMap(button.dataset.dataset);
    button.setAttribute('aria-disabled', String(added));
    button.firstChild.textContent = added ? 'Added' : 'Add';
  }
}

function resultItem(dataset) {
  const title = dataset.title || dataset.alternate;
  const item = el('li', { class: 'dataset-result', 'data-dataset': dataset.pk });
  item.append(el('span', { class: 'result-title' }, title));
  if (dataset.subtype) item.append(el('span', { class: 'kind' }, ` (${dataset.subtype})`));
  const button = named('button', { type: 'button', class: 'add-layer', 'data-dataset': dataset.pk }, 'Add', title);
  button.addEventListener('click', () => {
    if (!inMap(dataset.pk)) addDataset(dataset);
  });
  item.append(document.createTextNode(' '), button);
  return item;
}

async function searchDatasets(query) {
  const serial = ++searchSerial;
  const results = byId('dataset-results');
  const status = byId('dataset-status');
  showAlert('dataset-error', '');
  status.textContent = 'Searching…';
  const params = new URLSearchParams({ page_size: String(RESULTS) });
  params.append('sort[]', 'title');
  if (query) params.set('search', query);
  let data;
  try {
    data = await getJson(api(`datasets?${params}`));
  } catch (failure) {
    if (serial !== searchSerial) return;
    status.textContent = '';
    showAlert('dataset-error', `The datasets could not be searched (${failure.message}).`);
    return;
  }
  if (serial !== searchSerial) return;
  const found = (data.datasets || []).filter((d) => d.alternate);
  results.replaceChildren(...found.map(resultItem));
  refreshResults();
  const total = Number.isInteger(data.total) ? data.total : found.length;
  if (!found.length) status.textContent = 'No datasets found.';
  else if (total > found.length) status.textContent = `${total} datasets found; the first ${found.length} are shown.`;
  else status.textContent = `${total} ${total === 1 ? 'dataset' : 'datasets'} found.`;
  results.setAttribute('data-ready', 'true');
}

// -- loading and saving ------------------------------------------------------------------

async function loadMap(mapId) {
  let record;
  try {
    record = (await getJson(api(`maps/${encodeURIComponent(mapId)}`))).map;
  } catch (failure) {
    showAlert('composer-error', failure.status === 404 || failure.status === 403
      ? 'This map does not exist or you may not see it.' : `The map could not be loaded (${failure.message}).`);
    return null;
  }
  if (!(record.perms || []).includes(CHANGE)) {
    showAlert('composer-error', 'You may view this map but not change it.');
    return null;
  }
  const bottomFirst = [...(record.maplayers || [])].sort((a, b) => (a.order ?? 0) - (b.order ?? 0));
  layers = bottomFirst.reverse().map((l) => newLayer({
    pk: l.pk,
    dataset: l.dataset ? Number(l.dataset.pk) : null,
    name: l.dataset ? l.dataset.alternate : null,
    title: (l.dataset && l.dataset.title) || l.name || 'Layer',
    opacity: typeof l.opacity === 'number' ? l.opacity : 1,
    visible: l.visibility !== false,
    style: l.current_style || '',
    styles: (l.dataset && l.dataset.styles) || [],
    defaultStyle: (l.dataset && l.dataset.default_style) || null,
  }));
  return record;
}

function layerBody(layer, order) {
  const body = { order, opacity: layer.opacity, visibility: layer.visible, current_style: layer.style || '' };
  if (layer.pk !== null && layer.pk !== undefined) body.pk = layer.pk;
  if (layer.dataset !== null) body.dataset = layer.dataset;
  return body;
}

// The API names a bad layer by its index in maplayers (bottom first): say its title instead.
function plainFailure(text, bottomFirst) {
  return text.replace(/maplayers\[(\d+)\](\.\w+)?/g, (whole, index) => {
    const layer = bottomFirst[Number(index)];
    return layer ? `The layer “${layer.title}”` : whole;
  });
}

function mapPage(record) {
  const detail = safeUrl(record.detail_url);
  if (detail && new URL(detail).origin === window.location.origin) return detail;
  return `${base}/catalogue/#/map/${Number(record.pk)}`;
}

async function save(event) {
  event.preventDefault();
  const form = byId('save-form');
  const status = byId('save-status');
  showAlert('save-error', '');
  const title = form.elements.title.value.trim();
  if (!title) {
    showAlert('save-error', 'Give the map a title before saving it.');
    form.elements.title.focus();
    return;
  }
  const bottomFirst = [...layers].reverse();
  // The map keeps the preview's view (MapStore's center and zoom), restored when it opens.
  const data = (editing && editing.data && typeof editing.data === 'object') ? editing.data : {};
  const mapConfig = (data.map && typeof data.map === 'object') ? data.map : {};
  const body = { title, abstract: form.elements.abstract.value, maplayers: bottomFirst.map(layerBody),
    data: { ...data, map: { ...mapConfig, ...preview.getView() } } };
  const button = byId('save-map');
  button.disabled = true;
  status.textContent = 'Saving the map…';
  try {
    const response = editing
      ? await send('PATCH', api(`maps/${Number(editing.pk)}`), body)
      : await send('POST', api('maps'), body);
    if (!response.ok) {
      status.textContent = '';
      showAlert('save-error', `The map was not saved. ${plainFailure(await failureText(response), bottomFirst)}`);
      return;
    }
    const record = (await response.json()).map;
    status.textContent = 'The map is saved; opening its page…';
    window.location.assign(mapPage(record));
  } catch {
    status.textContent = '';
    showAlert('save-error', 'The map was not saved: the server could not be reached.');
  } finally {
    button.disabled = false;
  }
}

export async function setupComposer(signedIn) {
  const page = byId('composer-page');
  const mapId = page.dataset.mapId || '';
  if (!(await signedIn)) {
    byId('composer-login').hidden = false;
    page.setAttribute('data-ready', 'true');
    return;
  }
  if (mapId) {
    editing = await loadMap(mapId);
    if (!editing) {
      page.setAttribute('data-ready', 'true');
      return;
    }
    byId('map-title').value = editing.title || '';
    byId('map-abstract').value = editing.abstract || '';
    byId('save-map').textContent = 'Save the changes';
    document.title = `Edit ${editing.title || 'a map'} · Cartotheca`;
  }
  byId('composer').hidden = false;
  setupPreview();
  renderLayers();
  syncPreview();
  const saved = editing && editing.data && editing.data.map;
  if (saved && preview.setView(saved)) markStale();
  else fitPreview(editing && editing.extent && editing.extent.coords);
  byId('dataset-search').addEventListener('submit', (event) => {
    event.preventDefault();
    searchDatasets(byId('dataset-query').value.trim());
  });
  byId('save-form').addEventListener('submit', save);
  await searchDatasets('');
  page.setAttribute('data-ready', 'true');
}
