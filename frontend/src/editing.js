// Editing on a resource page, shown only for what the API's `perms` on the resource allow (the
// API still enforces them): title/abstract/keywords, permissions of users and groups, delete.
import { api, base, failureText, followExecution, getJson, send } from './api.js';
import { el } from './dom.js';

const LEVELS = ['none', 'view', 'download', 'edit', 'manage'];
let current = null; // the resource the controls act on

function say(id, text, failed = false) {
  const node = document.getElementById(id);
  node.textContent = text;
  node.classList.toggle('failure', failed);
}

export function hideEditing() {
  current = null;
  for (const id of ['edit-section', 'permissions-section', 'delete-section']) {
    const node = document.getElementById(id);
    node.hidden = true;
    node.removeAttribute('data-ready');
  }
  document.getElementById('delete-confirm').hidden = true;
  for (const id of ['edit-status', 'permissions-status', 'delete-status']) say(id, '');
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

function setupMetadataForm(resource, reload) {
  const form = document.getElementById('edit-form');
  form.elements.title.value = resource.title || '';
  form.elements.abstract.value = resource.abstract || '';
  form.elements.keywords.value = (resource.keywords || []).map((k) => k.name).join(', ');
  form.onsubmit = async (event) => {
    event.preventDefault();
    const keywords = form.elements.keywords.value.split(',').map((k) => k.trim()).filter(Boolean);
    const body = { title: form.elements.title.value, abstract: form.elements.abstract.value, keywords };
    say('edit-status', 'Saving…');
    const response = await send('PATCH', api(`resources/${resource.pk}`), body);
    if (!response.ok) {
      say('edit-status', `Not saved: ${await failureText(response)}`, true);
      return;
    }
    await reload();
    say('edit-status', 'Saved.');
    document.getElementById('edit-section').setAttribute('data-saved', 'true');
  };
}

function setupDelete(resource) {
  const ask = document.getElementById('delete-button');
  const confirmBox = document.getElementById('delete-confirm');
  const yes = document.getElementById('delete-yes');
  ask.onclick = () => {
    confirmBox.hidden = false;
    document.getElementById('delete-question').textContent =
      `Delete “${resource.title || 'this resource'}” for good? This cannot be undone.`;
    yes.focus();
  };
  document.getElementById('delete-no').onclick = () => {
    confirmBox.hidden = true;
    ask.focus();
  };
  yes.onclick = async () => {
    yes.disabled = true;
    say('delete-status', 'Deleting…');
    const response = await send('DELETE', api(`resources/${resource.pk}`));
    yes.disabled = false;
    if (response.ok) {
      window.location.assign(`${base}/?deleted=${encodeURIComponent(resource.pk)}`);
      return;
    }
    say('delete-status', `Not deleted: ${await failureText(response)}`, true);
  };
}

export function setupEditing(resource, reload) {
  hideEditing();
  current = resource;
  const perms = new Set(resource.perms || []);
  if (perms.has('change_resourcebase_metadata')) {
    setupMetadataForm(resource, reload);
    document.getElementById('edit-section').hidden = false;
  }
  if (perms.has('change_resourcebase_permissions')) {
    setupPermissionForms(resource);
    document.getElementById('permissions-section').hidden = false;
    loadPermissions(resource);
  }
  if (perms.has('delete_resourcebase')) {
    setupDelete(resource);
    document.getElementById('delete-section').hidden = false;
  }
}
