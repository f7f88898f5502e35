// A resource page's description: the metadata panel, the Download menu (data formats only) and
// the OGC service addresses with copy buttons, all from the resource's API record and links.
import { base } from './api.js';
import { el, safeUrl } from './dom.js';

// The contact roles of a GeoNode record, as its metadata editor names them.
const CONTACT_ROLES = [
  ['poc', 'Point of contact'], ['metadata_author', 'Metadata author'], ['publisher', 'Publisher'],
  ['custodian', 'Custodian'], ['distributor', 'Distributor'], ['originator', 'Originator'],
  ['principal_investigator', 'Principal investigator'], ['processor', 'Processor'],
  ['resource_provider', 'Resource provider'], ['resource_user', 'Resource user'],
];
// The data formats offered for download, by the name of the record's link.
const VECTOR_DOWNLOADS = [['Zipped Shapefile', 'Zipped shapefile'], ['GeoJSON', 'GeoJSON'], ['CSV', 'CSV'],
  ['KML', 'KML']];
const RASTER_DOWNLOADS = [['GeoTIFF', 'GeoTIFF']];

function addMeta(list, term, value) {
  if (value === undefined || value === null || value === '') return;
  list.append(el('dt', {}, term), el('dd', {}, value));
}

function degrees(value, positive, negative) {
  return `${Math.abs(Math.round(value * 1e4) / 1e4)}°${value < 0 ? negative : positive}`;
}

function person(user) {
  const name = [user.first_name, user.last_name].filter(Boolean).join(' ');
  const who = name ? `${name} (${user.username})` : user.username;
  return user.email ? `${who} <${user.email}>` : who;
}

function day(value) {
  return typeof value === 'string' ? value.slice(0, 10) : '';
}

// The metadata panel; `dataset` is the dataset's own record (attributes), when there is one.
export function describeResource(list, resource, dataset) {
  list.replaceChildren();
  addMeta(list, 'Type', resource.subtype ? `${resource.resource_type} (${resource.subtype})` : resource.resource_type);
  addMeta(list, 'Owner', resource.owner && resource.owner.username);
  addMeta(list, 'Category', resource.category && (resource.category.gn_description || resource.category.identifier));
  const dateType = resource.date_type ? ` (${resource.date_type})` : '';
  addMeta(list, 'Date', resource.date && `${day(resource.date)}${dateType}`);
  addMeta(list, 'Licence', resource.license && (resource.license.name || resource.license.identifier));
  addMeta(list, 'Regions', (resource.regions || []).map((r) => r.name).join(', '));
  addMeta(list, 'Layer name', resource.alternate);
  addMeta(list, 'Coordinate reference system', resource.srid);
  const coords = resource.extent && resource.extent.coords;
  if (Array.isArray(coords) && coords.length === 4 && resource.resource_type !== 'document') {
    const [west, south, east, north] = coords;
    addMeta(list, 'Extent', `${degrees(west, 'E', 'W')} to ${degrees(east, 'E', 'W')}, `
      + `${degrees(south, 'N', 'S')} to ${degrees(north, 'N', 'S')}`);
  }
  const attributes = ((dataset && dataset.attribute_set) || []).filter((a) => a.visible !== false);
  if (resource.subtype === 'raster') {
    addMeta(list, 'Bands', attributes.length ? String(attributes.length) : '');
  } else {
    const named = attributes.filter((a) => !/^gml:|geometry/i.test(a.attribute_type || ''));
    addMeta(list, 'Attributes', named.map((a) => `${a.attribute} (${(a.attribute_type || '').replace(/^xsd:/, '')})`).join(', '));
    // Filled from the attribute table's count (the WFS numberMatched).
    if (resource.resource_type === 'dataset') addMeta(list, 'Features', '…');
  }
  const start = day(resource.temporal_extent_start);
  const end = day(resource.temporal_extent_end);
  if (start || end) addMeta(list, 'Temporal extent', `${start || '…'} to ${end || '…'}`);
  for (const [role, label] of CONTACT_ROLES) {
    addMeta(list, label, (resource[role] || []).map(person).join('; '));
  }
  addMeta(list, 'Attribution', resource.attribution);
  addMeta(list, 'Purpose', resource.raw_purpose || resource.purpose);
  addMeta(list, 'Constraints', resource.raw_constraints_other || resource.constraints_other);
  addMeta(list, 'Restrictions', resource.restriction_code_type && (resource.restriction_code_type.identifier || ''));
  addMeta(list, 'Supplemental information', resource.raw_supplemental_information || resource.supplemental_information);
  addMeta(list, 'Edition', resource.edition);
  addMeta(list, 'Language', resource.language);
  addMeta(list, 'Maintenance', resource.maintenance_frequency);
  addMeta(list, 'DOI', resource.doi);
  addMeta(list, 'Created', day(resource.created));
  addMeta(list, 'Last updated', day(resource.last_updated));
}

// Sets the "Features" entry of the panel once the attribute table knows the count.
export function showFeatureCount(list, total) {
  for (const term of list.querySelectorAll('dt')) {
    if (term.textContent === 'Features') term.nextElementSibling.textContent = String(total);
  }
}

function ownUrl(value) {
  const href = safeUrl(value);
  return href && new URL(href).origin === window.location.origin ? href : null;
}

// The Download menu: the data in the formats clients read, then the original upload.
export function showDownloads(resource) {
  const menu = document.getElementById('download-menu');
  const list = document.getElementById('download-list');
  list.replaceChildren();
  menu.open = false;
  const links = resource.links || [];
  const wanted = resource.subtype === 'raster' ? RASTER_DOWNLOADS : VECTOR_DOWNLOADS;
  for (const [name, label] of wanted) {
    const link = links.find((l) => l.link_type === 'data' && l.name === name);
    const href = link && ownUrl(link.url);
    if (!href) continue;
    const item = el('li');
    item.append(el('a', { href, class: 'download-link', 'data-format': label, download: '' }, label));
    list.append(item);
  }
  const original = links.find((l) => l.link_type === 'original');
  const href = original && ownUrl(original.url);
  if (href) {
    const item = el('li');
    item.append(el('a', { href, class: 'download-link', 'data-format': 'original', download: '' },
      `Original upload (${original.extension})`));
    list.append(item);
  }
  menu.hidden = list.childElementCount === 0;
}

async function copyText(text, status) {
  try {
    await navigator.clipboard.writeText(text);
    status.textContent = 'Copied.';
  } catch {
    status.textContent = 'Select the address and copy it.';
  }
}

function serviceItem(label, url, id) {
  const item = el('li', { class: 'service', 'data-service': id });
  const input = el('input', { id: `service-${id}`, class: 'service-url', readonly: '', value: url });
  const status = el('span', { class: 'copy-status', role: 'status' });
  const button = el('button', { type: 'button', class: 'copy-url' }, 'Copy');
  button.append(el('span', { class: 'visually-hidden' }, ` the ${label} address`));
  button.addEventListener('click', () => copyText(input.value, status));
  item.append(el('label', { for: input.id }, label), input, button, status);
  return item;
}

// The OGC services' addresses (capabilities) and the XYZ tiles of a dataset.
export function showServices(resource) {
  const section = document.getElementById('services');
  const list = document.getElementById('service-list');
  list.replaceChildren();
  section.hidden = true;
  if (resource.resource_type !== 'dataset' || !resource.alternate) return;
  const ows = new URL(`${base}/ows`, window.location.href).href;
  const kinds = new Set((resource.links || []).map((l) => l.link_type));
  const services = [['WMS', '1.3.0'], [kinds.has('OGC:WCS') ? 'WCS' : 'WFS', kinds.has('OGC:WCS') ? '2.0.1' : '2.0.0'],
    ['WMTS', '1.0.0']];
  for (const [service, version] of services) {
    if (!kinds.has(`OGC:${service}`)) continue;
    const params = new URLSearchParams({ service, version, request: 'GetCapabilities' });
    list.append(serviceItem(service, `${ows}?${params}`, service.toLowerCase()));
  }
  const tiles = (resource.links || []).find((l) => l.name === 'Tiles' && l.link_type === 'image');
  if (tiles && ownUrl(tiles.url.replace(/[{}]/g, ''))) list.append(serviceItem('XYZ tiles', tiles.url, 'tiles'));
  section.hidden = list.childElementCount === 0;
}
