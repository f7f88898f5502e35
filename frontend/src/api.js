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

export async function send(method, url) {
  return fetch(url, {
    method, credentials: 'same-origin',
    headers: { ...SCRIPTED, 'X-CSRFToken': cookie('csrftoken') || '', Accept: 'application/json' },
  });
}
