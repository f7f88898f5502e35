// The metadata form of a resource page: the fields GeoNode's metadata editor offers most, written
// with one PATCH of /api/v2/resources/{pk}. Choices come from the API's lists (categories,
// regions); an error the API names a field for is shown by that field and focused.
import { api, getJson, send } from './api.js';
import { el } from './dom.js';

// The choices of a reference list, read once per page.
const choices = {};
function referenceChoices(name) {
  if (!choices[name]) {
    choices[name] = getJson(api(`${name}?page_size=1000`)).then((data) => data[name] || []).catch(() => []);
  }
  return choices[name];
}

async function fillCategories(select, current) {
  const items = await referenceChoices('categories');
  select.replaceChildren(el('option', { value: '' }, 'None'),
    ...items.map((item) => el('option', { value: item.identifier }, item.gn_description || item.identifier)));
  select.value = current || '';
  select.dataset.ready = 'true';
}

// Regions in their tree order, each indented under its parent.
async function fillRegions(select, current) {
  const items = await referenceChoices('regions');
  const chosen = new Set(current);
  select.replaceChildren(...items.map((region) => {
    const option = el('option', { value: region.code }, `${'\u00a0\u00a0'.repeat(region.level || 0)}${region.name}`);
    option.selected = chosen.has(region.code);
    return option;
  }));
  select.dataset.ready = 'true';
}

const day = (value) => (typeof value === 'string' ? value.slice(0, 10) : '');
const usernames = (text) => text.split(',').map((u) => u.trim()).filter(Boolean);
const names = (users) => (users || []).map((u) => u.username).join(', ');
const codes = (regions) => (regions || []).map((r) => r.code).sort().join(',');
const identifier = (ref) => (ref && ref.identifier) || '';
const text = (resource, key) => resource[`raw_${key}`] || resource[key] || '';
const orNull = (v) => v || null;
const asIs = (v) => v;
const people = (v) => usernames(v).map((username) => ({ username }));

// Each field beyond title, abstract and keywords: [what the form holds, what the record held,
// the wire value]. Only changed fields are sent, so a value the form shows less precisely (a
// date's time) is kept.
function fields(form, resource) {
  const e = form.elements;
  const selected = [...e.regions.selectedOptions].map((o) => o.value);
  // A list still loading shows no choice yet: it counts as unchanged.
  const ready = (select, value, initial) => (select.dataset.ready === 'true' ? value : initial);
  return {
    category: [ready(e.category, e.category.value, identifier(resource.category)), identifier(resource.category),
      orNull],
    regions: [ready(e.regions, [...selected].sort().join(','), codes(resource.regions)), codes(resource.regions),
      () => selected.map((code) => ({ code }))],
    language: [e.language.value.trim(), resource.language || '', asIs],
    doi: [e.doi.value.trim(), resource.doi || '', asIs],
    date: [e.date.value, day(resource.date), orNull],
    date_type: [e.date_type.value, resource.date_type || 'publication', asIs],
    temporal_extent_start: [e.temporal_extent_start.value, day(resource.temporal_extent_start), orNull],
    temporal_extent_end: [e.temporal_extent_end.value, day(resource.temporal_extent_end), orNull],
    license: [e.license.value.trim(), identifier(resource.license), orNull],
    restriction_code_type: [e.restriction_code_type.value.trim(), identifier(resource.restriction_code_type), orNull],
    constraints_other: [e.constraints_other.value, text(resource, 'constraints_other'), asIs],
    purpose: [e.purpose.value, text(resource, 'purpose'), asIs],
    supplemental_information: [e.supplemental_information.value, text(resource, 'supplemental_information'), asIs],
    attribution: [e.attribution.value, resource.attribution || '', asIs],
    poc: [usernames(e.poc.value).join(','), usernames(names(resource.poc)).join(','), people],
    metadata_author: [usernames(e.metadata_author.value).join(','),
      usernames(names(resource.metadata_author)).join(','), people],
  };
}

function fill(form, resource) {
  const e = form.elements;
  e.title.value = resource.title || '';
  e.abstract.value = resource.abstract || '';
  e.keywords.value = (resource.keywords || []).map((k) => k.name).join(', ');
  delete e.category.dataset.ready;
  delete e.regions.dataset.ready;
  fillCategories(e.category, identifier(resource.category));
  fillRegions(e.regions, (resource.regions || []).map((r) => r.code));
  e.language.value = resource.language || '';
  e.doi.value = resource.doi || '';
  e.date.value = day(resource.date);
  e.date_type.value = resource.date_type || 'publication';
  e.temporal_extent_start.value = day(resource.temporal_extent_start);
  e.temporal_extent_end.value = day(resource.temporal_extent_end);
  e.license.value = identifier(resource.license);
  e.restriction_code_type.value = identifier(resource.restriction_code_type);
  e.constraints_other.value = text(resource, 'constraints_other');
  e.purpose.value = text(resource, 'purpose');
  e.supplemental_information.value = text(resource, 'supplemental_information');
  e.attribution.value = resource.attribution || '';
  e.poc.value = names(resource.poc);
  e.metadata_author.value = names(resource.metadata_author);
}

// Removes the messages shown by fields from the last attempt.
function clearFieldErrors(form) {
  for (const node of form.querySelectorAll('.field-error')) node.remove();
  for (const control of form.querySelectorAll('[aria-invalid]')) {
    control.removeAttribute('aria-invalid');
    control.removeAttribute('aria-describedby');
  }
  document.getElementById('edit-error').textContent = '';
}

// The API's messages start with the field they are about ("regions: unknown region X"); the
// message goes next to that field, which is marked invalid and focused. The form's alert line
// reads it out.
function showError(form, messages) {
  document.getElementById('edit-error').textContent = `Not saved: ${messages.join(' ')}`;
  let first = null;
  for (const message of messages) {
    const match = /^(\w+):\s*(.*)$/s.exec(message);
    const control = match && form.elements.namedItem(match[1]);
    if (!control || !control.id) continue;
    const note = el('p', { id: `${control.id}-error`, class: 'field-error failure' }, match[2]);
    control.after(note);
    control.setAttribute('aria-invalid', 'true');
    control.setAttribute('aria-describedby', note.id);
    first = first || control;
  }
  (first || document.getElementById('edit-error')).focus();
}

async function errorMessages(response) {
  try {
    const data = await response.json();
    if (Array.isArray(data.errors) && data.errors.length) return data.errors.map(String);
    if (typeof data.detail === 'string') return [data.detail];
  } catch { /* not JSON */ }
  return [`HTTP ${response.status}`];
}

// Fills the form from `resource` and saves it; `saved()` runs after a successful save.
export function setupMetadataForm(resource, saved) {
  const form = document.getElementById('edit-form');
  const status = document.getElementById('edit-status');
  clearFieldErrors(form);
  fill(form, resource);
  form.onsubmit = async (event) => {
    event.preventDefault();
    clearFieldErrors(form);
    const e = form.elements;
    const keywords = e.keywords.value.split(',').map((k) => k.trim()).filter(Boolean);
    const body = { title: e.title.value, abstract: e.abstract.value, keywords };
    for (const [key, [value, initial, wire]] of Object.entries(fields(form, resource))) {
      if (value !== initial) body[key] = wire(value);
    }
    status.textContent = 'Saving…';
    const response = await send('PATCH', api(`resources/${resource.pk}`), body);
    status.textContent = '';
    if (!response.ok) {
      showError(form, await errorMessages(response));
      return;
    }
    await saved();
  };
}
