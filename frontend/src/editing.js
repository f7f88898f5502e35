// Editing on a resource page, offered in the Edit menu only for what the API's `perms` on the
// resource allow (the API still enforces them): the metadata form, an ISO metadata file, the
// style (SLD), the thumbnail, permissions of users and groups, copy and delete.
import { SCRIPTED, api, base, failureText, followExecution, getJson, send } from './api.js';
import { cookie, el, safeUrl } from './dom.js';
import { offerPane, openPane, resetEditMenu, setupEditMenu } from './editmenu.js';
import { setupMetadataForm } from './metadata_form.js';

const LEVELS = ['none', 'view', 'download', 'edit', 'manage'];
const SECTIONS = ['edit-section', 'iso-section', 'style-section', 'thumbnail-section', 'copy-section',
  'permissions-section', 'delete-section'];
const STATUSES = ['edit-status', 'iso-status', 'style-status', 'thumbnail-status', 'copy-status', 'permissions-status',
  'delete-status'];
const ALERTS = ['iso-error', 'style-error', 'thumbnail-error', 'copy-error'];
const DELETED_KEY = 'cartotheca-deleted';
let current = null; // the resource the controls act on
let notice = null; // {pk, original}: shown once on the page of the copy just made

function say(id, text, failed = false) {
  const node = document.getElementById(id);
  node.textContent = text;
  node.classList.toggle('failure', failed);
}

// Progress goes to the section's status line, a failure to its alert (read out at once).
function report(name, progress, failure = '') {
  say(`${name}-status`, progress);
  document.getElementById(`${name}-error`).textContent = failure;
}

export function hideEditing() {
  current = null;
  for (const id of SECTIONS) {
    const node = document.getElementById(id);
    node.hidden = true;
    node.removeAttribute('data-ready');
    node.removeAttribute('data-saved');
    node.removeAttribute('data-checked');
  }
  resetEditMenu();
  for (const id of STATUSES) say(id, '');
  for (const id of ALERTS) document.getElementById(id).textContent = '';
  document.getElementById('resource-notice').replaceChildren();
}

// A multipart request through the cookie session (the browser writes the boundary itself).
function sendForm(method, url, body) {
  const headers = { ...SCRIPTED, 'X-CSRFToken': cookie('csrftoken') || '', Accept: 'application/json' };
  return fetch(url, { method, credentials: 'same-origin', headers, body });
}

// Why an execution failed, in the words the server recorded.
function executionFailure(status) {
  const output = status.output_params || {};
  if (Array.isArray(output.errors) && output.errors.length) return output.errors.map(String).join(' ');
  return output.error || status.log || 'the server could not finish it';
}

// The signed-in user's global permissions (GeoNode's "add_resource"), read once per page.
let userPerms = null;
function currentUserPerms() {
  if (!userPerms) {
    userPerms = (async () => {
      if (!cookie('csrftoken')) return [];
      try {
        const claims = await getJson(`${base}/o/userinfo`);
        const user = (await getJson(api(`users/${Number(claims.sub)}`))).user;
        return (user && user.perms) || [];
      } catch {
        return [];
      }
    })();
  }
  return userPerms;
}

// GeoNode's rule: a copyable resource, a user who may add resources, and for datasets and
// documents (whose data is copied too) the right to download it.
function canCopy(resource, globalPerms) {
  if (!resource.is_copyable || !globalPerms.includes('add_resource')) return false;
  return !['dataset', 'document'].includes(resource.resource_type)
    || (resource.perms || []).includes('download_resourcebase');
}

function levelSelect(label, value, resource) {
  const select = el('select', { 'aria-label': label, class: 'perm-level' });
  const levels = LEVELS.filter((l) => l !== 'download' || ['dataset', 'document'].includes(resource.resource_type));
  if (!levels.includes(value)) levels.push(value);
  for (const level of levels) {
    const option = el('option', { value: level }, level);
    if (level === value) option.selected = true;
    select.append(option);
  }
  return select;
}

function permissionRow(kind, entry, resource) {
  const name = kind === 'user' ? entry.username : (entry.title || entry.name);
  const row = el('tr', { 'data-kind': kind, 'data-id': entry.id, 'data-name': kind === 'user' ? entry.username : entry.name });
  row.append(el('td', {}, kind === 'user' ? 'User' : 'Group'), el('td', {}, name));
  const cell = el('td');
  if (entry.permissions === 'owner') {
    cell.append(el('span', {}, 'owner'));
  } else {
    cell.append(levelSelect(`Permission of ${kind} ${name}`, entry.permissions, resource));
  }
  row.append(cell);
  return row;
}

async function loadPermissions(resource) {
  const section = document.getElementById('permissions-section');
  const body = document.getElementById('permissions-rows');
  body.replaceChildren();
  let spec;
  try {
    spec = await getJson(api(`resources/${resource.pk}/permissions`));
  } catch (failure) {
    say('permissions-status', `The permissions could not be read (${failure.message}).`, true);
    return;
  }
  if (current !== resource) return;
  for (const user of spec.users || []) body.append(permissionRow('user', user, resource));
  for (const group of spec.groups || []) body.append(permissionRow('group', group, resource));
  const level = document.getElementById('perm-new-level');
  level.replaceChildren(...levelSelect('', 'view', resource).children);
  section.setAttribute('data-ready', 'true');
}

function setupPermissionForms(resource) {
  const addForm = document.getElementById('perm-add-form');
  addForm.onsubmit = async (event) => {
    event.preventDefault();
    const username = addForm.elements.username.value.trim();
    if (!username) return;
    const body = document.getElementById('permissions-rows');
    let found;
    try {
      const params = new URLSearchParams({ 'filter{username}': username });
      found = ((await getJson(`${base}/api/v2/users?${params}`)).users || [])[0];
    } catch { found = null; }
    if (!found) {
      // Only administrators may look other accounts up (GET /api/v2/users lists just oneself).
      say('permissions-status', `No user named ${username} that you may look up.`, true);
      return;
    }
    const existing = [...body.querySelectorAll('tr[data-kind="user"]')].find((r) => r.dataset.id === String(found.pk));
    const level = document.getElementById('perm-new-level').value;
    if (existing) {
      const select = existing.querySelector('select');
      if (select) select.value = level;
    } else {
      body.append(permissionRow('user', { id: found.pk, username: found.username, permissions: level }, resource));
    }
    addForm.elements.username.value = '';
    say('permissions-status', `${found.username} added with ${level}; save to apply.`);
  };
  const saveForm = document.getElementById('permissions-form');
  saveForm.onsubmit = async (event) => {
    event.preventDefault();
    const spec = { users: [], groups: [] };
    for (const row of document.querySelectorAll('#permissions-rows tr')) {
      const select = row.querySelector('select');
      if (!select) continue;
      spec[row.dataset.kind === 'user' ? 'users' : 'groups'].push({ id: Number(row.dataset.id), permissions: select.value });
    }
    const button = document.getElementById('permissions-save');
    button.disabled = true;
    say('permissions-status', 'Saving the permissions…');
    try {
      const response = await send('PATCH', api(`resources/${resource.pk}/permissions`), spec);
      if (!response.ok) {
        say('permissions-status', `The permissions were not changed: ${await failureText(response)}`, true);
        return;
      }
      const status = await followExecution(await response.json());
      if (status.status === 'finished') {
        say('permissions-status', 'The permissions are saved.');
        document.getElementById('permissions-section').setAttribute('data-saved', 'true');
        await loadPermissions(resource);
      } else {
        const reason = (status.output_params && status.output_params.error) || status.log || 'the change failed';
        say('permissions-status', `The permissions were not changed: ${reason}`, true);
      }
    } catch (failure) {
      say('permissions-status', `The permissions were not changed: ${failure.message}`, true);
    } finally {
      button.disabled = false;
    }
  };
}

// What a deletion takes away, by the kind of resource.
const LOSSES = {
  dataset: ['its data and the files uploaded with it', 'its styles and thumbnail',
    'its metadata, keywords and permissions', 'its layer in the maps that show it (the maps stay)'],
  document: ['the document\'s file', 'its thumbnail, metadata and permissions',
    'its links to other resources (they stay)'],
  map: ['the map\'s layers, their order and its view (the datasets stay)', 'its thumbnail, metadata and permissions'],
};

function setupDelete(resource) {
  const yes = document.getElementById('delete-yes');
  document.getElementById('delete-question').textContent =
    `Delete “${resource.title || 'this resource'}” for good? This takes away:`;
  const losses = LOSSES[resource.resource_type] || ['its metadata, thumbnail and permissions'];
  document.getElementById('delete-loss').replaceChildren(...losses.map((loss) => el('li', {}, loss)));
  yes.onclick = async () => {
    yes.disabled = true;
    say('delete-status', 'Deleting…');
    const response = await send('DELETE', api(`resources/${resource.pk}`));
    yes.disabled = false;
    if (response.ok) {
      // The catalogue names what was deleted (the record is gone; the title travels here).
      try {
        sessionStorage.setItem(DELETED_KEY, JSON.stringify({ pk: String(resource.pk), title: resource.title || '' }));
      } catch { /* storage refused: the catalogue says it without the title */ }
      window.location.assign(`${base}/?deleted=${encodeURIComponent(resource.pk)}`);
      return;
    }
    say('delete-status', `Not deleted: ${await failureText(response)}`, true);
  };
}

function setupIsoUpload(resource, reload) {
  const form = document.getElementById('iso-form');
  const button = document.getElementById('iso-submit');
  form.onsubmit = async (event) => {
    event.preventDefault();
    const file = form.elements.metadata_file.files[0];
    if (!file) return;
    button.disabled = true;
    report('iso', `Uploading ${file.name}…`);
    const body = new FormData();
    body.append('metadata_file', file);
    try {
      const response = await sendForm('PUT', api(`datasets/${Number(resource.pk)}/metadata`), body);
      if (!response.ok) {
        report('iso', '', `The metadata was not changed: ${await failureText(response)}`);
        return;
      }
      form.reset();
      await reload();
      report('iso', `The metadata from ${file.name} is applied.`);
      document.getElementById('iso-section').setAttribute('data-saved', 'true');
    } catch (failure) {
      report('iso', '', `The metadata was not changed: ${failure.message}`);
    } finally {
      button.disabled = false;
    }
  };
}

// GeoNode's upload action for a published dataset's style; applied by an execution.
function setupStyleUpload(resource, reload) {
  const form = document.getElementById('style-form');
  const button = document.getElementById('style-submit');
  form.onsubmit = async (event) => {
    event.preventDefault();
    const file = form.elements.sld_file.files[0];
    if (!file) return;
    button.disabled = true;
    report('style', `Uploading ${file.name}…`);
    const body = new FormData();
    body.append('action', 'resource_style_upload');
    body.append('resource_pk', String(Number(resource.pk)));
    body.append('base_file', file);
    try {
      const response = await sendForm('POST', api('uploads/upload'), body);
      if (!response.ok) {
        report('style', '', `The style was not changed: ${await failureText(response)}`);
        return;
      }
      report('style', 'Applying the style…');
      const status = await followExecution(await response.json());
      if (status.status !== 'finished') {
        report('style', '', `The style was not changed: ${executionFailure(status)}`);
        return;
      }
      form.reset();
      await reload();
      report('style', `The style from ${file.name} is applied.`);
      document.getElementById('style-section').setAttribute('data-saved', 'true');
    } catch (failure) {
      report('style', '', `The style was not changed: ${failure.message}`);
    } finally {
      button.disabled = false;
    }
  };
}

// A new thumbnail from an image file (GeoNode's set_thumbnail); the pane shows the current one.
function setupThumbnail(resource, reload) {
  const form = document.getElementById('thumbnail-form');
  const button = document.getElementById('thumbnail-submit');
  const image = document.getElementById('thumbnail-current');
  const src = safeUrl(resource.thumbnail_url);
  image.hidden = !src;
  if (src) {
    image.setAttribute('src', src);
    image.setAttribute('alt', `The thumbnail of ${resource.title || 'the resource'} now`);
  }
  form.onsubmit = async (event) => {
    event.preventDefault();
    const file = form.elements.file.files[0];
    if (!file) return;
    button.disabled = true;
    report('thumbnail', `Uploading ${file.name}…`);
    const body = new FormData();
    body.append('file', file);
    try {
      const response = await sendForm('PUT', api(`resources/${Number(resource.pk)}/set_thumbnail`), body);
      if (!response.ok) {
        report('thumbnail', '', `The thumbnail was not changed: ${await failureText(response)}`);
        return;
      }
      form.reset();
      await reload();
      report('thumbnail', `The thumbnail from ${file.name} is applied.`);
      document.getElementById('thumbnail-section').setAttribute('data-saved', 'true');
    } catch (failure) {
      report('thumbnail', '', `The thumbnail was not changed: ${failure.message}`);
    } finally {
      button.disabled = false;
    }
  };
}

function setupCopy(resource) {
  const button = document.getElementById('copy-button');
  button.onclick = async () => {
    button.disabled = true;
    report('copy', 'Copying…');
    try {
      const response = await send('PUT', api(`resources/${Number(resource.pk)}/copy`), {});
      if (!response.ok) {
        report('copy', '', `No copy was made: ${await failureText(response)}`);
        return;
      }
      const status = await followExecution(await response.json());
      const made = status.status === 'finished' && ((status.output_params || {}).resources || [])[0];
      if (!made) {
        report('copy', '', `No copy was made: ${executionFailure(status)}`);
        return;
      }
      notice = { pk: String(Number(made.id)), original: resource };
      window.location.hash = `#/${resource.resource_type}/${Number(made.id)}`;
    } catch (failure) {
      report('copy', '', `No copy was made: ${failure.message}`);
    } finally {
      button.disabled = false;
    }
  };
}

// On the page of a copy just made: what it is, and the way back to the original.
function showCopyNotice(resource) {
  if (!notice || notice.pk !== String(resource.pk)) return;
  const { original } = notice;
  notice = null;
  const node = document.getElementById('resource-notice');
  const href = safeUrl(`#/${original.resource_type}/${Number(original.pk)}`);
  node.append(document.createTextNode('This is the new copy of '),
    el('a', { href, id: 'copy-original' }, `“${original.title || 'the resource'}”`),
    document.createTextNode('.'));
}

// The catalogue after a deletion (/?deleted=<pk>) says what was deleted.
function announceDeletion() {
  const node = document.getElementById('catalogue-notice');
  const pk = new URLSearchParams(window.location.search).get('deleted');
  if (!node || !pk) return;
  let title = '';
  try {
    const saved = JSON.parse(sessionStorage.getItem(DELETED_KEY) || 'null');
    if (saved && saved.pk === pk) title = saved.title;
  } catch { /* nothing saved: the message goes without the title */ }
  node.textContent = title ? `“${title}” was deleted.` : 'The resource was deleted.';
}

// Re-reads the resource after a change made in a pane; that pane stays open, its heading focused
// (the control that had focus was hidden while the page was redrawn).
function keepingPane(reload, paneId) {
  return async () => {
    await reload();
    openPane(paneId, { focus: false });
    document.getElementById(paneId).querySelector('h2').focus();
  };
}

export function setupEditing(resource, reload) {
  hideEditing();
  setupEditMenu();
  current = resource;
  showCopyNotice(resource);
  const perms = new Set(resource.perms || []);
  if (perms.has('change_resourcebase_metadata')) {
    const reloadHere = keepingPane(reload, 'edit-section');
    setupMetadataForm(resource, async () => {
      await reloadHere();
      say('edit-status', 'Saved.');
      document.getElementById('edit-section').setAttribute('data-saved', 'true');
    });
    offerPane('edit-section');
  }
  if (resource.resource_type === 'dataset' && perms.has('change_resourcebase_metadata')) {
    setupIsoUpload(resource, keepingPane(reload, 'iso-section'));
    offerPane('iso-section');
  }
  if (resource.resource_type === 'dataset' && perms.has('change_dataset_style')) {
    setupStyleUpload(resource, keepingPane(reload, 'style-section'));
    offerPane('style-section');
  }
  if (perms.has('change_resourcebase_metadata')) {
    setupThumbnail(resource, keepingPane(reload, 'thumbnail-section'));
    offerPane('thumbnail-section');
  }
  if (perms.has('change_resourcebase_permissions')) {
    setupPermissionForms(resource);
    offerPane('permissions-section');
    loadPermissions(resource);
  }
  // The menu keeps one order whatever is offered first: copy is decided after the user's rights
  // are read, and its item already has its place in the list.
  currentUserPerms().then((globalPerms) => {
    if (current !== resource) return;
    const section = document.getElementById('copy-section');
    section.setAttribute('data-checked', 'true'); // decided, offered or not
    if (!canCopy(resource, globalPerms)) return;
    setupCopy(resource);
    offerPane('copy-section');
  });
  if (perms.has('delete_resourcebase')) {
    setupDelete(resource);
    offerPane('delete-section');
  }
}

if (document.body.dataset.page === 'catalogue') announceDeletion();
