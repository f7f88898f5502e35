// The staff page of OAuth2 applications (/account/applications): list, register (the secret is
// shown once, from the creation answer) and delete, through /api/v2/oauth-applications.
import { isStaff } from './account.js';
import { api, failureText, getJson, send } from './api.js';
import { el } from './dom.js';

const byId = (id) => document.getElementById(id);

async function showApplications() {
  const { applications } = await getJson(api('oauth-applications'));
  const rows = byId('applications-rows');
  rows.replaceChildren();
  for (const application of applications) {
    const remove = el('button', { type: 'button' }, `Delete ${application.name}`);
    remove.addEventListener('click', async () => {
      const response = await send('DELETE', api(`oauth-applications/${encodeURIComponent(application.client_id)}`));
      if (!response.ok) {
        byId('application-error').textContent = `Not deleted: ${await failureText(response)}`;
        byId('application-error').hidden = false;
        return;
      }
      await showApplications();
    });
    rows.append(row(application, remove));
  }
  byId('applications-empty').hidden = applications.length > 0;
  byId('applications-table').hidden = applications.length === 0;
  byId('applications').dataset.ready = 'true';
}

function row(application, remove) {
  const tr = el('tr', { 'data-client-id': application.client_id });
  for (const text of [application.name, application.client_id, application.client_type,
    application.grant_types.join(', '), application.user || '—']) {
    tr.append(el('td', {}, text));
  }
  const actions = el('td');
  actions.append(remove);
  tr.append(actions);
  return tr;
}

function setupForm() {
  const form = byId('application-form');
  const error = byId('application-error');
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    byId('application-created').hidden = true;
    const body = {
      name: form.name.value,
      client_type: form.client_type.value,
      grant_types: [...form.querySelectorAll('input[name="grant_types"]:checked')].map((box) => box.value),
      redirect_uris: form.redirect_uris.value.split('\n').map((line) => line.trim()).filter(Boolean),
      user: form.user.value.trim() || null,
    };
    const response = await send('POST', api('oauth-applications'), body);
    if (!response.ok) {
      error.textContent = `Not registered: ${await failureText(response)}`;
      error.hidden = false;
      return;
    }
    const created = await response.json();
    byId('created-client-id').textContent = created.application.client_id;
    byId('created-client-secret').textContent = created.client_secret || '';
    byId('created-secret-line').hidden = !created.client_secret;
    byId('application-created').hidden = false;
    form.reset();
    await showApplications();
  });
}

export async function setupApplications(signedIn) {
  const name = await signedIn;
  if (!name) {
    byId('applications-login').hidden = false;
    return;
  }
  if (!isStaff()) {
    byId('applications-forbidden').hidden = false;
    return;
  }
  byId('applications').hidden = false;
  setupForm();
  await showApplications();
}
