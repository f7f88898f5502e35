// The catalogue's search: search box, facets with counts, sort, paging, featured resources and
// favourites; the URL carries the state.
import { api, base, getJson, send } from './api.js';
import { el, safeUrl } from './dom.js';
import { formatExtent, parseExtent, setupAreaFilter, showArea } from './extent.js';
import { placeholder } from './placeholders.js';
import { setupResultsMap, showFootprints } from './resultsmap.js';

const PAGE_SIZE = 10;
const TYPES = [
  ['dataset', 'Datasets'],
  ['document', 'Documents'],
  ['map', 'Maps'],
  ['geoapp', 'Geo apps'],
];
const SORTS = ['-date', 'date', 'title', '-title', '-popular_count'];
const TYPE_LABELS = Object.fromEntries(TYPES);
// Each facet: its URL key, the list filter it sets, and its name in the facets API
// (/api/v2/facets/{name}), which counts the visible resources per value in one query. A facet's
// counts are taken under every other active filter but not its own, so its other values stay
// offered. Owners and groups are filtered by name, which their facets give as the label.
const FACETS = [
  { key: 'type', label: 'Resource type', filter: 'filter{resource_type}', api: 'resourcetype',
    value: (t) => t.key, text: (t) => TYPE_LABELS[t.key] || t.label },
  { key: 'category', label: 'Category', filter: 'filter{category.identifier}', api: 'category', size: 20 },
  { key: 'keyword', label: 'Keyword', filter: 'filter{keywords.slug}', api: 'keyword', size: 20 },
  { key: 'region', label: 'Region', filter: 'filter{regions.code}', api: 'region', size: 20 },
  { key: 'owner', label: 'Owner', filter: 'filter{owner.username}', api: 'owner', size: 20,
    value: (t) => t.label },
  { key: 'group', label: 'Group', filter: 'filter{group.name}', api: 'group', size: 20,
    value: (t) => t.label },
];

let signedIn = Promise.resolve(null);
let onNavigate = () => {};

// The signed-in user's name (or null), and what to tell the router after a pushState.
export function configureCatalogue(user, navigated) {
  signedIn = user;
  onNavigate = navigated;
}

function favoriteButton(resource) {
  const button = el('button', { type: 'button', class: 'favorite', 'aria-pressed': Boolean(resource.favorite),
    'aria-label': `Favourite: ${resource.title || resource.pk}` }, resource.favorite ? '★' : '☆');
  button.addEventListener('click', async () => {
    const on = button.getAttribute('aria-pressed') !== 'true';
    const response = await send(on ? 'POST' : 'DELETE', api(`resources/${resource.pk}/favorite`));
    if (response.ok) {
      button.setAttribute('aria-pressed', String(on));
      button.textContent = on ? '★' : '☆';
    }
  });
  return button;
}

function readState() {
  const params = new URLSearchParams(window.location.search);
  const page = Number.parseInt(params.get('page') || '1', 10);
  const sort = params.get('sort');
  const state = {
    q: params.get('q') || '',
    sort: SORTS.includes(sort) ? sort : '-date',
    page: Number.isFinite(page) && page > 0 ? page : 1,
  };
  for (const facet of FACETS) state[facet.key] = params.get(facet.key) || '';
  state.favorite = params.get('favorite') === 'true';
  const extent = parseExtent(params.get('extent'));
  state.extent = extent ? formatExtent(extent) : '';
  return state;
}

function stateUrl(state) {
  const params = new URLSearchParams();
  if (state.q) params.set('q', state.q);
  for (const facet of FACETS) if (state[facet.key]) params.set(facet.key, state[facet.key]);
  if (state.favorite) params.set('favorite', 'true');
  if (state.extent) params.set('extent', state.extent);
  if (state.sort !== '-date') params.set('sort', state.sort);
  if (state.page > 1) params.set('page', String(state.page));
  const query = params.toString();
  return `${window.location.pathname}${query ? `?${query}` : ''}`;
}

// The filters of a search (not its order or page), without facet ``without``'s own.
function filterParams(state, without) {
  const params = new URLSearchParams();
  if (state.q) params.set('search', state.q);
  for (const facet of FACETS) {
    if (facet.key !== without && state[facet.key]) params.set(facet.filter, state[facet.key]);
  }
  if (state.favorite) params.set('favorite', 'true');
  if (state.extent) params.set('extent', state.extent);
  return params;
}

function queryParams(state, { pageSize = PAGE_SIZE, page = state.page } = {}) {
  const params = filterParams(state);
  params.append('sort[]', state.sort);
  params.set('page', String(page));
  params.set('page_size', String(pageSize));
  return params;
}

function narrowed(state) {
  return Boolean(state.q) || state.favorite || Boolean(state.extent) || FACETS.some((facet) => state[facet.key]);
}

// A facet's values with their counts under the search's other filters; a chosen value that is
// not among the first ones is still listed, so it can be unchosen.
async function facetValues(state, facet) {
  const params = filterParams(state, facet.key);
  params.set('page_size', String(facet.size || 10));
  const data = await getJson(`${api(`facets/${facet.api}`)}?${params}`);
  const value = facet.value || ((t) => t.key);
  const text = facet.text || ((t) => t.label);
  const values = ((data.topics && data.topics.items) || [])
    .map((t) => ({ value: String(value(t)), label: String(text(t)), count: t.count }))
    .filter((v) => v.value);
  const chosen = state[facet.key];
  if (chosen && !values.some((v) => v.value === chosen)) values.push({ value: chosen, label: chosen, count: null });
  return values;
}

let searchSerial = 0;

const DATE_FORMAT = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });

function cardThumbnail(resource) {
  const frame = el('div', { class: 'card-thumb' });
  const drawn = placeholder(resource);
  const thumb = safeUrl(resource.thumbnail_url);
  if (thumb) {
    const img = el('img', { class: 'thumb', src: thumb, alt: '', loading: 'lazy' });
    img.addEventListener('error', () => img.replaceWith(drawn));
    frame.append(img);
  } else {
    frame.append(drawn);
  }
  return frame;
}

// "Owner: name", "Category: label" and the date: the facts a reader scans a list by.
function cardFacts(resource) {
  const facts = el('p', { class: 'card-meta' });
  const owner = resource.owner && resource.owner.username;
  if (owner) {
    const span = el('span', { class: 'card-owner' });
    span.append(el('span', { class: 'visually-hidden' }, 'Owner: '), document.createTextNode(String(owner)));
    facts.append(span);
  }
  const when = resource.date ? new Date(resource.date) : null;
  if (when && !Number.isNaN(when.getTime())) {
    facts.append(el('time', { class: 'card-date', datetime: when.toISOString() }, DATE_FORMAT.format(when)));
  }
  return facts;
}

function cardBadges(resource) {
  const badges = el('p', { class: 'card-badges' });
  const type = String(resource.resource_type || '');
  badges.append(el('span', { class: `kind badge badge-${type}` }, resource.subtype && type === 'dataset'
    ? `${type} · ${resource.subtype}` : type));
  const category = resource.category && (resource.category.gn_description || resource.category.identifier);
  if (category) {
    const span = el('span', { class: 'card-category' });
    span.append(el('span', { class: 'visually-hidden' }, 'Category: '), document.createTextNode(String(category)));
    badges.append(span);
  }
  return badges;
}

function renderCards(list, resources, user) {
  list.replaceChildren();
  for (const resource of resources) {
    const item = el('li', { class: 'card', 'data-id': resource.pk, 'data-type': resource.resource_type });
    item.append(cardThumbnail(resource));
    const text = el('div', { class: 'card-body' });
    const heading = el('h3');
    const href = safeUrl(resource.detail_url) || `${base}/catalogue/#/${resource.resource_type}/${resource.pk}`;
    heading.append(el('a', { href, class: 'result-link' }, resource.title || '(untitled)'));
    text.append(heading, cardBadges(resource), cardFacts(resource));
    if (resource.abstract) {
      const abstract = resource.abstract.length > 240 ? `${resource.abstract.slice(0, 240)}…` : resource.abstract;
      text.append(el('p', { class: 'result-abstract' }, abstract));
    }
    item.append(text);
    if (user) item.append(favoriteButton(resource));
    list.append(item);
  }
}

// The page's results come without a count (total=false): on a large catalogue the count of
// every visible row costs far more than the page, so it follows in its own request.
function renderResults(data, user) {
  const resources = data.resources || [];
  renderCards(document.getElementById('results'), resources, user);
  showFootprints(resources);
  const page = data.page || 1;
  const first = (page - 1) * PAGE_SIZE + 1;
  document.getElementById('result-count').textContent = resources.length
    ? `Showing ${first}–${first + resources.length - 1}…` : 'No resources found';
  document.getElementById('page-info').textContent = `Page ${page}`;
  document.getElementById('prev-page').disabled = page <= 1;
  document.getElementById('next-page').disabled = !(data.links && data.links.next);
}

function renderTotal(total, page) {
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  document.getElementById('result-count').textContent = total === 1 ? '1 resource found' : `${total} resources found`;
  document.getElementById('page-info').textContent = `Page ${page} of ${pages}`;
}

async function renderFacets(state, serial) {
  const container = document.getElementById('facet-groups');
  const groups = await Promise.all(FACETS.map(async (facet) => {
    try {
      return { facet, values: await facetValues(state, facet) };
    } catch {
      return { facet, values: [] };
    }
  }));
  if (serial !== searchSerial) return;
  container.replaceChildren();
  for (const { facet, values } of groups) {
    const shown = values.filter((v) => v.count > 0 || v.value === state[facet.key]);
    if (!shown.length) continue;
    const group = el('section', { class: 'facet-group', 'data-facet': facet.key });
    const headingId = `facet-${facet.key}`;
    group.append(el('h3', { id: headingId }, facet.label));
    const list = el('ul', { 'aria-labelledby': headingId });
    for (const value of shown) {
      const pressed = state[facet.key] === value.value;
      const button = el('button', { type: 'button', 'aria-pressed': pressed, 'data-value': value.value });
      button.append(el('span', { class: 'facet-label' }, value.label),
        el('span', { class: 'facet-count' }, Number.isInteger(value.count) ? value.count : ''));
      button.addEventListener('click', () => {
        const next = readState();
        next[facet.key] = next[facet.key] === value.value ? '' : value.value;
        next.page = 1;
        navigate(next);
      });
      const item = el('li');
      item.append(button);
      list.append(item);
    }
    group.append(list);
    container.append(group);
  }
  container.setAttribute('data-ready', 'true');
}

export async function search() {
  const state = readState();
  const serial = ++searchSerial;
  document.getElementById('search-input').value = state.q;
  document.getElementById('sort-select').value = state.sort;
  showArea(state.extent);
  const results = document.getElementById('results');
  results.removeAttribute('data-ready');
  document.getElementById('facet-groups').removeAttribute('data-ready');
  const favorites = document.getElementById('favorites-only');
  favorites.setAttribute('aria-pressed', String(state.favorite));
  // The results first, alone: the count, the facets and the featured resources are asked for
  // once they are shown, so they do not compete with the page for the server.
  let page = 1;
  try {
    const uncounted = queryParams(state);
    uncounted.set('total', 'false');
    const [data, user] = await Promise.all([getJson(`${api('resources')}?${uncounted}`), signedIn]);
    if (serial !== searchSerial) return;
    favorites.hidden = !user;
    renderResults(data, user);
    page = data.page || 1;
  } catch (error) {
    if (serial !== searchSerial) return;
    results.replaceChildren();
    showFootprints([]);
    document.getElementById('result-count').textContent = `The search failed (${error.message}).`;
  }
  results.setAttribute('data-ready', 'true');
  const counted = queryParams(state, { pageSize: 1, page: 1 });
  getJson(`${api('resources')}?${counted}`).then((data) => {
    if (serial === searchSerial && Number.isInteger(data.total)) renderTotal(data.total, page);
  }).catch(() => {});
  showFeatured(!narrowed(state) && state.page === 1);
  await renderFacets(state, serial);
}

let featured = null;

// Featured resources, above the results of an unfiltered first page.
async function showFeatured(visible) {
  const section = document.getElementById('featured');
  if (!visible) {
    section.hidden = true;
    return;
  }
  if (!featured) {
    featured = getJson(`${api('resources')}?filter{featured}=true&page_size=4&sort[]=-date&total=false`)
      .then((data) => data.resources || []).catch(() => []);
  }
  const resources = await featured;
  if (!resources.length) return;
  renderCards(document.getElementById('featured-list'), resources, null);
  section.hidden = !visible || narrowed(readState()) || readState().page !== 1;
}

function navigate(state) {
  window.history.pushState(null, '', stateUrl(state));
  onNavigate();
  search();
}

export function setupSearch() {
  const form = document.getElementById('search-form');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const state = readState();
    state.q = document.getElementById('search-input').value.trim();
    state.sort = document.getElementById('sort-select').value;
    state.page = 1;
    navigate(state);
  });
  document.getElementById('sort-select').addEventListener('change', () => form.requestSubmit());
  document.getElementById('prev-page').addEventListener('click', () => {
    const state = readState();
    navigate({ ...state, page: Math.max(1, state.page - 1) });
  });
  document.getElementById('next-page').addEventListener('click', () => {
    const state = readState();
    navigate({ ...state, page: state.page + 1 });
  });
  document.getElementById('favorites-only').addEventListener('click', () => {
    const state = readState();
    navigate({ ...state, favorite: !state.favorite, page: 1 });
  });
  document.getElementById('clear-filters').addEventListener('click', () => {
    const state = readState();
    for (const facet of FACETS) state[facet.key] = '';
    navigate({ ...state, favorite: false, extent: '', page: 1 });
  });
  setupFilterPanel();
  setupAreaFilter((extent) => navigate({ ...readState(), extent, page: 1 }));
  setupResultsMap();
}

// The filters fold behind their heading's button; on a narrow screen they start folded, so the
// results come first.
function setupFilterPanel() {
  const toggle = document.getElementById('filters-toggle');
  const panel = document.getElementById('filter-panel');
  const setOpen = (open) => {
    toggle.setAttribute('aria-expanded', String(open));
    panel.hidden = !open;
  };
  toggle.addEventListener('click', () => setOpen(toggle.getAttribute('aria-expanded') !== 'true'));
  setOpen(!window.matchMedia('(max-width: 48rem)').matches);
}
