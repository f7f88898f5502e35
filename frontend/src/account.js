// The account links of the header, the login and logout pages (cookie session + CSRF token).
import { SCRIPTED, api, base, getJson } from './api.js';
import { cookie, el } from './dom.js';

let staffUser = false;
let userId = null;
// The signed-in user's id (the claims' "sub"), once setupAccountNav's promise has resolved.
export const currentUserId = () => userId;
// Whether the signed-in user is staff or a superuser, once setupAccountNav's promise has resolved.
export const isStaff = () => staffUser;

async function staffFlag(userId) {
  try {
    const { user } = await getJson(api(`users/${encodeURIComponent(userId)}`));
    return Boolean(user && (user.is_staff || user.is_superuser));
  } catch {
    return false;
  }
}

export async function setupAccountNav() {
  const slot = document.getElementById('account-nav');
  if (!slot || !cookie('csrftoken')) return null;
  let name = null;
  let claims;
  try {
    claims = await getJson(`${base}/o/userinfo`);
    name = claims.preferred_username;
  } catch {
    return null; // the session has expired: keep "Log in"
  }
  slot.replaceChildren();
  if (name) slot.append(el('span', { class: 'who' }, `Signed in as ${name} · `));
  slot.append(el('a', { href: `${base}/account/profile`, id: 'profile-link' }, 'Profile'),
    document.createTextNode(' · '),
    el('a', { href: `${base}/account/logout`, id: 'logout-link' }, 'Log out'));
  userId = claims.sub || null;
  // The claims do not say whether the user is staff; the user's own record does.
  staffUser = claims.sub ? await staffFlag(claims.sub) : false;
  const staffNav = document.getElementById('staff-nav');
  if (staffNav) staffNav.hidden = !staffUser;
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

async function answerText(response) {
  try {
    const data = await response.json();
    if (Array.isArray(data.errors) && data.errors.length) return data.errors.map(String).join(' ');
    if (typeof data.detail === 'string') return data.detail;
    if (typeof data.error_description === 'string') return data.error_description;
    if (typeof data.error === 'string') return data.error;
  } catch { /* not JSON */ }
  return `HTTP ${response.status}`;
}

// Self sign-up through the API (POST /account/signup); an account may wait for approval.
export function setupSignup() {
  const form = document.getElementById('signup-form');
  if (!form) return; // sign-up is closed
  const error = document.getElementById('signup-error');
  const done = document.getElementById('signup-done');
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    const body = { username: form.username.value, password: form.password.value };
    if (form.email.value) body.email = form.email.value;
    const response = await fetch(`${base}/account/signup`, {
      method: 'POST', credentials: 'same-origin', body: JSON.stringify(body),
      headers: { ...SCRIPTED, 'Content-Type': 'application/json', Accept: 'application/json' },
    });
    if (!response.ok) {
      error.textContent = `Signing up failed: ${await answerText(response)}`;
      error.hidden = false;
      return;
    }
    const data = await response.json();
    form.hidden = true;
    done.textContent = data.pending_approval
      ? 'Your account was created and waits for an administrator\'s approval.'
      : 'Your account was created. You can log in now.';
  });
}

// The signed-in user's claims (GET /o/userinfo) and an API token for scripts (POST /o/token).
export async function setupProfile() {
  const anonymous = document.getElementById('profile-anonymous');
  let claims = null;
  if (cookie('csrftoken')) {
    try {
      claims = await getJson(`${base}/o/userinfo`);
    } catch { claims = null; }
  }
  if (!claims || !claims.preferred_username) {
    anonymous.hidden = false;
    return;
  }
  const details = document.getElementById('profile-details');
  const add = (term, value) => {
    if (value) details.append(el('dt', {}, term), el('dd', {}, value));
  };
  add('Username', claims.preferred_username);
  add('Name', [claims.given_name, claims.family_name].filter(Boolean).join(' '));
  add('E-mail', claims.email);
  add('Groups', (claims.groups || []).join(', '));
  document.getElementById('profile-view').hidden = false;
  document.getElementById('token-section').hidden = false;
  const form = document.getElementById('token-form');
  const error = document.getElementById('token-error');
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    const fields = new URLSearchParams({
      grant_type: 'password', username: claims.preferred_username, password: form.password.value,
      client_id: form.client_id.value,
    });
    if (form.client_secret.value) fields.set('client_secret', form.client_secret.value);
    const response = await fetch(`${base}/o/token`, {
      method: 'POST', credentials: 'omit', body: fields,
      headers: { ...SCRIPTED, Accept: 'application/json' },
    });
    form.password.value = '';
    if (!response.ok) {
      error.textContent = `No token was issued: ${await answerText(response)}`;
      error.hidden = false;
      return;
    }
    const token = await response.json();
    document.getElementById('token-value').textContent = token.access_token;
    document.getElementById('token-expiry').textContent = token.expires_in
      ? `It expires in ${Math.round(token.expires_in / 60)} minutes.` : '';
    document.getElementById('token-usage').textContent = 'Authorization: Bearer <token>';
    document.getElementById('token-result').hidden = false;
    document.getElementById('token-result').setAttribute('data-ready', 'true');
  });
  document.getElementById('token-section').setAttribute('data-ready', 'true');
}

function postJson(path, body) {
  return fetch(`${base}${path}`, {
    method: 'POST', credentials: 'same-origin', body: JSON.stringify(body),
    headers: { ...SCRIPTED, 'Content-Type': 'application/json', Accept: 'application/json' },
  });
}

// "Forgot password": the server answers the same whether or not an account has the address.
export function setupPasswordReset() {
  const form = document.getElementById('reset-form');
  const error = document.getElementById('reset-error');
  const done = document.getElementById('reset-done');
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    const response = await postJson('/account/password/reset', { email: form.email.value });
    if (!response.ok) {
      error.textContent = response.status === 429
        ? 'Too many requests for a new password; try again later.'
        : `The link could not be requested: ${await answerText(response)}`;
      error.hidden = false;
      return;
    }
    const data = await response.json();
    form.hidden = true;
    done.textContent = data.detail;
    done.focus();
  });
}

// The page of an e-mailed link: the key is the last part of the address.
export async function setupPasswordResetKey() {
  const key = decodeURIComponent(window.location.pathname.split('/').filter(Boolean).pop() || '');
  const checking = document.getElementById('reset-key-checking');
  const invalid = document.getElementById('reset-key-invalid');
  const form = document.getElementById('reset-key-form');
  const error = document.getElementById('reset-key-error');
  const done = document.getElementById('reset-key-done');
  const refuse = async (response) => {
    checking.hidden = true;
    form.hidden = true;
    invalid.textContent = await answerText(response);
    invalid.hidden = false;
  };
  const check = await postJson('/account/password/reset/check', { key });
  if (!check.ok) {
    await refuse(check);
    return;
  }
  const { username } = await check.json();
  checking.hidden = true;
  document.getElementById('reset-key-account').textContent = `Account: ${username}`;
  form.hidden = false;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    if (form.password.value !== form.repeat.value) {
      error.textContent = 'The two passwords differ.';
      error.hidden = false;
      return;
    }
    const response = await postJson('/account/password/reset/key', { key, password: form.password.value });
    if (!response.ok) {
      error.textContent = await answerText(response);
      error.hidden = false;
      return;
    }
    form.hidden = true;
    done.hidden = false;
    done.focus();
  });
}
