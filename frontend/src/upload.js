// The upload page: the chosen files become a dataset upload (the public upload API, then its
// import's execution is followed) or documents (the documents API, one file after another), each
// transfer with its progress; the page says which before sending and lets the user decide for
// a file that can be either. Errors are shown in the API's words.
import { SCRIPTED, api, base, getJson } from './api.js';
import { cookie, el, safeUrl } from './dom.js';

// A dataset's extra files and the upload form's field each goes in (the main file is base_file).
const FIELDS = { '.dbf': 'dbf_file', '.shx': 'shx_file', '.prj': 'prj_file', '.cpg': 'cpg_file',
  '.sld': 'sld_file', '.xml': 'xml_file' };
const PARTS = new Set(['.dbf', '.shx', '.prj', '.cpg', '.qmd', '.sld', '.xml']);
const DATASET_ONLY = new Set([...PARTS, '.shp', '.gpkg', '.geojson', '.json', '.csv', '.kml', '.fgb']);
// Both a dataset and a common document type: proposed as a dataset, the user may say otherwise.
const EITHER = new Set(['.zip', '.tif', '.tiff']);
const POLL_MS = 300;

function extension(name) {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? '' : name.slice(dot).toLowerCase();
}

// 'dataset', 'document' or 'either' for a file name; anything not geodata is left to the
// documents API, which knows the allowed types and answers in words when one is not.
export function kindOf(name) {
  const ext = extension(name);
  if (EITHER.has(ext)) return 'either';
  return DATASET_ONLY.has(ext) ? 'dataset' : 'document';
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

function documentForm(file, title) {
  const form = new FormData();
  if (title) form.append('title', title);
  form.append('doc_file', file, file.name);
  return form;
}

// The chosen files as uploads: at most one dataset (its main file and parts), and one
// document per other file; `problem` says in words why it cannot be sent as chosen.
export function planOf(entries) {
  const datasetFiles = entries.filter((e) => e.kind === 'dataset').map((e) => e.file);
  const documents = entries.filter((e) => e.kind === 'document').map((e) => e.file);
  const mains = datasetFiles.filter((f) => !PARTS.has(extension(f.name)));
  let problem = null;
  if (mains.length > 1) {
    problem = `Only one dataset can be published at a time, and each of these files is one: ${
      mains.map((f) => f.name).join(', ')}. Upload them one after another.`;
  } else if (datasetFiles.length && !mains.length) {
    problem = `A dataset needs its main file (.shp, .zip, .gpkg, .geojson, .csv, .tif…); only ${
      datasetFiles.map((f) => f.name).join(', ')} was chosen.`;
  }
  return { dataset: mains.length ? { main: mains[0], files: datasetFiles } : null, documents, problem };
}

function sentence(parts) {
  const text = parts.map((p) => String(p).trim()).filter(Boolean)
    .map((p) => (/[.!?]$/.test(p) ? p : `${p}.`));
  return text.join(' ');
}

function errorText(status, body) {
  if (body && Array.isArray(body.errors) && body.errors.length) return sentence(body.errors);
  if (body && typeof body.detail === 'string') return sentence([body.detail]);
  if (status === 401 || status === 403) return 'You are not allowed to upload: log in again.';
  return `The upload was refused (HTTP ${status}).`;
}

function transfer(url, form, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url);
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
      else reject(new Error(errorText(xhr.status, body)));
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

function sizeText(bytes) {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

function count(n, one, many) {
  return n === 1 ? `1 ${one}` : `${n} ${many}`;
}

// One row per chosen file: what will happen to it, a choice when it could be either, and,
// once sending, its own progress and result.
function fileRow(entry, index, onChoice) {
  const row = el('li', { class: 'upload-file' });
  row.append(el('span', { class: 'upload-file-name' }, `${entry.file.name} (${sizeText(entry.file.size)})`));
  entry.fate = el('span', { class: 'upload-file-fate' });
  row.append(' ', entry.fate);
  if (entry.either) {
    const group = el('fieldset', { class: 'upload-kind' });
    group.append(el('legend', {}, `Upload ${entry.file.name} as`));
    for (const [value, label] of [['dataset', 'a dataset'], ['document', 'a document']]) {
      const id = `upload-kind-${index}-${value}`;
      const radio = el('input', { type: 'radio', id, name: `upload-kind-${index}`, value });
      radio.checked = entry.kind === value;
      radio.addEventListener('change', () => { if (radio.checked) onChoice(entry, value); });
      const option = el('span', { class: 'upload-kind-option' });
      option.append(radio, el('label', { for: id }, label));
      group.append(option);
    }
    row.append(group);
  }
  entry.progress = el('span', { class: 'upload-file-progress' });
  row.append(entry.progress);
  return row;
}

function describe(entries, plan, summary) {
  for (const entry of entries) {
    if (entry.kind === 'document') {
      entry.fate.textContent = '— will be added as a document.';
    } else if (plan.dataset && entry.file === plan.dataset.main) {
      entry.fate.textContent = '— will be published as a dataset.';
    } else if (plan.dataset) {
      entry.fate.textContent = `— goes with ${plan.dataset.main.name} into the dataset.`;
    } else {
      entry.fate.textContent = '— part of a dataset.';
    }
  }
  const what = [];
  if (plan.dataset) what.push('1 dataset');
  if (plan.documents.length) what.push(count(plan.documents.length, 'document', 'documents'));
  summary.textContent = plan.problem || (what.length ? `Will upload ${what.join(' and ')}.` : '');
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
  const summary = document.getElementById('upload-summary');
  const refusal = document.getElementById('upload-refusal'); // before sending: the form's own alert
  const button = document.getElementById('upload-submit');
  let entries = [];
  let plan = planOf([]);
  const refresh = () => {
    plan = planOf(entries);
    describe(entries, plan, summary);
  };
  const onChoice = (entry, kind) => {
    entry.kind = kind;
    refresh();
  };
  let busy = false; // a new choice waits for the uploads under way to end
  const choose = (files) => {
    if (busy) return;
    refusal.hidden = true;
    entries = [...files].map((file) => {
      const kind = kindOf(file.name);
      return { file, kind: kind === 'either' ? 'dataset' : kind, either: kind === 'either' };
    });
    chosenList.replaceChildren(...entries.map((entry, i) => fileRow(entry, i, onChoice)));
    refresh();
  };
  input.addEventListener('change', () => choose(input.files));
  if (input.files.length) choose(input.files); // chosen while the sign-in was being checked
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

  // Each upload's own bar in its file's row, mirrored by the section's transfer bar.
  const startRow = (entry, label) => {
    const bar = el('progress', { max: '100', value: '0', 'aria-label': label });
    entry.progress.replaceChildren(bar);
    return (percent) => { bar.value = percent; sent.value = percent; };
  };
  const rowResult = (entry, ...nodes) => entry.progress.append(...nodes);

  const sendDataset = async (dataset, title, entry) => {
    const progress = startRow(entry, `Transfer of ${dataset.main.name}`);
    imported.removeAttribute('value');
    message.textContent = `Sending ${dataset.main.name}…`;
    const started = await transfer(api('uploads/upload'), uploadForm(dataset.files, title), (percent) => {
      progress(percent);
      message.textContent = `Sending ${dataset.main.name}… ${percent}%`;
    });
    progress(100);
    message.textContent = 'Files received; importing…';
    const status = await follow(started, (s) => { message.textContent = `Importing… (${s.status})`; });
    if (status.status !== 'finished') throw new Error(plainError(status));
    imported.value = 100;
    const first = ((status.output_params && status.output_params.resources) || [])[0];
    if (first && first.id) {
      result.setAttribute('href', `${base}/catalogue/#/dataset/${Number(first.id)}`);
      result.hidden = false;
    }
    rowResult(entry, ' Published.');
  };

  const sendDocument = async (file, title, entry, place) => {
    const progress = startRow(entry, `Transfer of ${file.name}`);
    imported.removeAttribute('value');
    message.textContent = `Sending ${file.name}${place}…`;
    const answer = await transfer(api('documents'), documentForm(file, title), (percent) => {
      progress(percent);
      message.textContent = `Sending ${file.name}${place}… ${percent}%`;
    });
    progress(100);
    imported.value = 100;
    const record = answer.document || {};
    const href = safeUrl(record.detail_url)
      || (record.pk || record.id ? `${base}/catalogue/#/document/${Number(record.pk || record.id)}` : null);
    const name = `Open the document ${record.title || file.name}`;
    rowResult(entry, ' Added. ', href ? el('a', { href, class: 'upload-document-link' }, name) : '');
  };

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    refusal.hidden = true;
    result.hidden = true;
    if (!entries.length || plan.problem) {
      refusal.textContent = plan.problem || 'Choose the files to upload first.';
      refusal.hidden = false;
      return;
    }
    const current = plan;
    const chosen = entries;
    const uploads = (current.dataset ? 1 : 0) + current.documents.length;
    const titleText = document.getElementById('upload-title').value.trim();
    const titleOf = (file) => (titleText && uploads > 1 ? `${titleText} (${file.name})` : titleText);
    const entryOf = (file) => chosen.find((e) => e.file === file);
    section.hidden = false;
    section.removeAttribute('data-done');
    section.setAttribute('aria-busy', 'true');
    button.disabled = true;
    input.disabled = true;
    busy = true;
    sent.value = 0;
    imported.removeAttribute('value');
    const failures = [];
    const fail = (file, failure) => {
      failures.push(uploads > 1 ? `${file.name}: ${failure.message}` : failure.message);
      rowResult(entryOf(file), ' Not uploaded.');
    };
    if (current.dataset) {
      try {
        await sendDataset(current.dataset, titleOf(current.dataset.main), entryOf(current.dataset.main));
      } catch (failure) {
        fail(current.dataset.main, failure);
      }
    }
    for (const [i, file] of current.documents.entries()) {
      sent.value = 0;
      const place = current.documents.length > 1 ? ` (document ${i + 1} of ${current.documents.length})` : '';
      try {
        await sendDocument(file, titleOf(file), entryOf(file), place);
      } catch (failure) {
        fail(file, failure);
      }
    }
    section.removeAttribute('aria-busy');
    button.disabled = false;
    input.disabled = false;
    busy = false;
    if (failures.length) {
      imported.value = 0;
      message.textContent = '';
      error.textContent = failures.join(' ');
      error.hidden = false;
      section.setAttribute('data-done', 'failed');
      return;
    }
    const ready = [];
    if (current.dataset) ready.push('the dataset');
    if (current.documents.length === 1) ready.push('the document');
    if (current.documents.length > 1) ready.push(`the ${current.documents.length} documents`);
    const text = ready.join(' and ');
    message.textContent = `${text.charAt(0).toUpperCase()}${text.slice(1)} ${uploads > 1 ? 'are' : 'is'} ready.`;
    section.setAttribute('data-done', 'finished');
  });
}
