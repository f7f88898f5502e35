// The account links of the header, the login and logout pages (cookie session + CSRF token).
import { SCRIPTED, base, getJson } from './api.js';
import { cookie, el } from './dom.js';

export async function setupAccountNav() {
  const slot = document.getElementById('account-nav');
  if (!slot || !cookie('csrftoken')) return null;
  let name = null;
  try {
    const claims = await getJson(`${base}/o/userinfo`);
    name = claims.preferred_username;
  } catch {
    return null; // the session has expired: keep "Log in"
  }
  slot.replaceChildren();
  if (name) slot.append(el('span', { class: 'who' }, `Signed in as ${name} · `));
  slot.append(el('a', { href: `${base}/account/logout`, id: 'logout-link' }, 'Log out'));
  return name;
}

function nextPath() {
  const next = new URLSearchParams(window.location.search).get('next') || '';
  return next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') ? next : `${base}/`;
}

export function setupLogin() {
  const form = document.getElementById('login-form');
  const error = document.getElementById('login-error');
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    const body = JSON.stringify({ username: form.username.value, password: form.password.value });
    const response = await fetch(`${base}/account/login`, {
      method: 'POST', credentials: 'same-origin', body,
      headers: { ...SCRIPTED, 'Content-Type': 'application/json', Accept: 'application/json' },
    });
    if (response.ok) {
      window.location.assign(nextPath());
      return;
    }
    error.textContent = response.status === 401 || response.status === 403
      ? 'Wrong username or password.' : `Logging in failed (HTTP ${response.status}).`;
    error.hidden = false;
  });
}

export function setupLogout() {
  const form = document.getElementById('logout-form');
  const error = document.getElementById('logout-error');
  if (!cookie('csrftoken')) document.getElementById('logout-who').textContent = 'You are not logged in.';
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const response = await fetch(`${base}/account/logout`, {
      method: 'POST', credentials: 'same-origin',
      headers: { ...SCRIPTED, 'X-CSRFToken': cookie('csrftoken') || '', Accept: 'application/json' },
    });
    if (response.ok || !cookie('csrftoken')) {
      window.location.assign(`${base}/`);
      return;
    }
    error.textContent = `Logging out failed (HTTP ${response.status}).`;
    error.hidden = false;
  });
}
