// The public API of this server, as the pages' scripts call it.
import { cookie } from './dom.js';

export const base = document.body.dataset.base || '';
// Marks the pages' requests: a 401 then comes without the Basic challenge (no browser prompt).
export const SCRIPTED = { 'X-Requested-With': 'XMLHttpRequest' };
export const api = (path) => `${base}/api/v2/${path}`;

export async function getJson(url) {
  const response = await fetch(url, { credentials: 'same-origin', headers: { ...SCRIPTED, Accept: 'application/json' } });
  if (!response.ok) {
    const error = new Error(`HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return response.json();
}

export async function send(method, url, body) {
  const headers = { ...SCRIPTED, 'X-CSRFToken': cookie('csrftoken') || '', Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  return fetch(url, {
    method, credentials: 'same-origin', headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

// An API's error answer in words: its "errors" list, "detail" or the HTTP status.
export async function failureText(response) {
  try {
    const data = await response.json();
    if (Array.isArray(data.errors) && data.errors.length) return data.errors.map(String).join(' ');
    if (typeof data.detail === 'string') return data.detail;
  } catch { /* not JSON */ }
  return `HTTP ${response.status}`;
}

// Follows an execution (the answer of an asynchronous request) until it ends.
export async function followExecution(started, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  let delay = 100;
  for (;;) {
    const status = await getJson(started.status_url);
    if (status.status === 'finished' || status.status === 'failed') return status;
    if (Date.now() > deadline) throw new Error('the change is still running');
    await new Promise((resolve) => { setTimeout(resolve, delay); });
    delay = Math.min(delay * 2, 1000);
  }
}
