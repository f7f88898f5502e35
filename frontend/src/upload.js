// The upload page: the files go to the public upload API with the transfer's progress, then the
// import's execution is followed until the dataset is ready or its error is shown.
import { SCRIPTED, api, base, getJson } from './api.js';
import { cookie, el } from './dom.js';

const FIELDS = { '.dbf': 'dbf_file', '.shx': 'shx_file', '.prj': 'prj_file', '.cpg': 'cpg_file',
  '.sld': 'sld_file', '.xml': 'xml_file' };
const POLL_MS = 300;

function extension(name) {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? '' : name.slice(dot).toLowerCase();
}

// The upload form's fields: the main file is base_file, a shapefile's parts their own fields.
export function uploadForm(files, title) {
  const form = new FormData();
  form.append('charset', 'UTF-8');
  if (title) form.append('title', title);
  const main = files.find((f) => extension(f.name) === '.shp')
    || files.find((f) => !(extension(f.name) in FIELDS)) || files[0];
  form.append('base_file', main, main.name);
  for (const file of files) {
    if (file === main) continue;
    const field = FIELDS[extension(file.name)];
    if (field) form.append(field, file, file.name);
  }
  return form;
}

function transfer(form, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', api('uploads/upload'));
    for (const [name, value] of Object.entries(SCRIPTED)) xhr.setRequestHeader(name, value);
    xhr.setRequestHeader('X-CSRFToken', cookie('csrftoken') || '');
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable) onProgress(Math.round((100 * event.loaded) / event.total));
    });
    xhr.addEventListener('load', () => {
      let body = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = null;
      }
      if (xhr.status >= 200 && xhr.status < 300 && body) resolve(body);
      else reject(new Error(body && body.errors ? body.errors.join(' ') : `The upload was refused (HTTP ${xhr.status}).`));
    });
    xhr.addEventListener('error', () => reject(new Error('The connection was lost during the transfer.')));
    xhr.send(form);
  });
}

function plainError(status) {
  const log = typeof status.log === 'string' ? status.log.trim() : '';
  return log ? `The import failed: ${log}` : 'The import failed.';
}

async function follow(started, show) {
  for (;;) {
    const status = await getJson(`${api(`executionrequest/${encodeURIComponent(started.execution_id)}`)}`)
      .then((data) => data.request);
    show(status);
    if (status.status === 'finished' || status.status === 'failed') return status;
    await new Promise((resolve) => { setTimeout(resolve, POLL_MS); });
  }
}

export async function setupUpload(signedIn) {
  const form = document.getElementById('upload-form');
  if (!(await signedIn)) {
    document.getElementById('upload-login').hidden = false;
    return;
  }
  form.hidden = false;
  const input = document.getElementById('upload-files');
  const zone = document.getElementById('drop-zone');
  const chosenList = document.getElementById('upload-chosen');
  let chosen = [];
  const choose = (files) => {
    chosen = [...files];
    chosenList.replaceChildren(...chosen.map((f) => el('li', {}, `${f.name} (${f.size} bytes)`)));
  };
  input.addEventListener('change', () => choose(input.files));
  zone.addEventListener('dragover', (event) => { event.preventDefault(); zone.classList.add('dragging'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('dragging'));
  zone.addEventListener('drop', (event) => {
    event.preventDefault();
    zone.classList.remove('dragging');
    choose(event.dataTransfer.files);
  });

  const section = document.getElementById('upload-status');
  const sent = document.getElementById('transfer-progress');
  const imported = document.getElementById('import-progress');
  const message = document.getElementById('upload-message');
  const error = document.getElementById('upload-error');
  const result = document.getElementById('upload-result');
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    result.hidden = true;
    if (!chosen.length) {
      error.textContent = 'Choose the files to upload first.';
      error.hidden = false;
      return;
    }
    section.hidden = false;
    section.removeAttribute('data-done');
    sent.value = 0;
    imported.removeAttribute('value');
    message.textContent = 'Sending the files…';
    try {
      const started = await transfer(uploadForm(chosen, document.getElementById('upload-title').value.trim()),
        (percent) => { sent.value = percent; message.textContent = `Sending the files… ${percent}%`; });
      sent.value = 100;
      message.textContent = 'Files received; importing…';
      const status = await follow(started, (s) => { message.textContent = `Importing… (${s.status})`; });
      if (status.status !== 'finished') throw new Error(plainError(status));
      imported.value = 100;
      const resources = (status.output_params && status.output_params.resources) || [];
      const first = resources[0];
      message.textContent = 'The dataset is ready.';
      if (first && first.id) {
        result.setAttribute('href', `${base}/catalogue/#/dataset/${Number(first.id)}`);
        result.hidden = false;
      }
      section.setAttribute('data-done', 'finished');
    } catch (failure) {
      imported.value = 0;
      message.textContent = '';
      error.textContent = failure.message;
      error.hidden = false;
      section.setAttribute('data-done', 'failed');
    }
  });
}
