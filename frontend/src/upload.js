// The upload page: each chosen dataset (its main file and parts) becomes its own upload through
// the public upload API, its import's execution followed, and each other file a document through
// the documents API, one after another, each with its own progress and a cancel. The page says
// what will happen before sending and lets the user decide for a file that can be either; errors
// are shown in the API's words. "My uploads" lists the records of /api/v2/uploads.
import { SCRIPTED, api, base, getJson, send } from './api.js';
import { currentUserId } from './account.js';
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

function stem(name) {
  const dot = name.lastIndexOf('.');
  return (dot < 0 ? name : name.slice(0, dot)).toLowerCase();
}

// The chosen files as uploads: one dataset per main file (with the parts of the same name, or
// every part when there is one main file), and one document per other file; `problem` says in
// words why they cannot be sent as chosen.
export function planOf(entries) {
  const datasetFiles = entries.filter((e) => e.kind === 'dataset').map((e) => e.file);
  const documents = entries.filter((e) => e.kind === 'document').map((e) => e.file);
  const mains = datasetFiles.filter((f) => !PARTS.has(extension(f.name)));
  const datasets = mains.map((main) => ({ main, files: [main] }));
  const orphans = [];
  for (const part of datasetFiles.filter((f) => PARTS.has(extension(f.name)))) {
    const owner = datasets.find((d) => stem(d.main.name) === stem(part.name))
      || (datasets.length === 1 ? datasets[0] : null);
    if (owner) owner.files.push(part);
    else orphans.push(part);
  }
  let problem = null;
  if (datasetFiles.length && !mains.length) {
    problem = `A dataset needs its main file (.shp, .zip, .gpkg, .geojson, .csv, .tif…); only ${
      datasetFiles.map((f) => f.name).join(', ')} was chosen.`;
  } else if (orphans.length) {
    problem = `${orphans.map((f) => f.name).join(', ')} belongs to no dataset: give it the name of its
      main file (for example the .shp).`.replace(/\s+/g, ' ');
  }
  return { datasets, documents, problem };
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

// Said by a transfer or an import the user cancelled (not an error to show).
class Cancelled extends Error {}

// A POST with upload progress; `job.abort` stops it while the body is still being sent (the
// server then keeps nothing), and is cleared once the body has been sent.
function transfer(url, form, onProgress, job) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url);
    for (const [name, value] of Object.entries(SCRIPTED)) xhr.setRequestHeader(name, value);
    xhr.setRequestHeader('X-CSRFToken', cookie('csrftoken') || '');
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable) onProgress(Math.round((100 * event.loaded) / event.total));
    });
    xhr.upload.addEventListener('load', () => { job.abort = null; });
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
    xhr.addEventListener('abort', () => reject(new Cancelled('cancelled')));
    xhr.addEventListener('error', () => reject(new Error('The connection was lost during the transfer.')));
    job.abort = () => xhr.abort();
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
    const owner = plan.datasets.find((d) => d.files.includes(entry.file));
    if (entry.kind === 'document') {
      entry.fate.textContent = '— will be added as a document.';
    } else if (owner && entry.file === owner.main) {
      entry.fate.textContent = '— will be published as a dataset.';
    } else if (owner) {
      entry.fate.textContent = `— goes with ${owner.main.name} into the dataset.`;
    } else {
      entry.fate.textContent = '— part of a dataset.';
    }
  }
  const what = [];
  if (plan.datasets.length) what.push(count(plan.datasets.length, 'dataset', 'datasets'));
  if (plan.documents.length) what.push(count(plan.documents.length, 'document', 'documents'));
  summary.textContent = plan.problem || (what.length ? `Will upload ${what.join(' and ')}.` : '');
}

function readyText(datasets, documents) {
  const ready = [];
  if (datasets === 1) ready.push('the dataset');
  if (datasets > 1) ready.push(`the ${datasets} datasets`);
  if (documents === 1) ready.push('the document');
  if (documents > 1) ready.push(`the ${documents} documents`);
  const text = ready.join(' and ');
  return `${text.charAt(0).toUpperCase()}${text.slice(1)} ${datasets + documents > 1 ? 'are' : 'is'} ready.`;
}

// Undo an import that ended after its cancel was asked for: the dataset it made and its record.
async function undoImport(started, status) {
  const made = (status.output_params && status.output_params.resources) || [];
  for (const resource of made) {
    const response = await send('DELETE', api(`resources/${encodeURIComponent(resource.id)}`));
    if (!response.ok && response.status !== 404) throw new Error(`The dataset made could not be removed (HTTP ${response.status}).`);
  }
  const { uploads = [] } = await getJson(`${api('uploads')}?page_size=50&sort[]=-id`);
  const record = uploads.find((u) => u.execution_id === started.execution_id);
  if (record) {
    const response = await send('DELETE', api(`uploads/${encodeURIComponent(record.id)}`));
    if (!response.ok && response.status !== 404) throw new Error(`The upload record could not be removed (HTTP ${response.status}).`);
  }
}

const STATE_WORDS = {
  PROCESSED: 'published', INVALID: 'failed', RUNNING: 'importing', PENDING: 'waiting', WAITING: 'waiting',
  READY: 'received', COMPLETE: 'importing', INCOMPLETE: 'incomplete',
};

// "My uploads": the signed-in user's upload records, newest first, with their states and errors.
async function showMyUploads() {
  const list = document.getElementById('my-uploads-list');
  const note = document.getElementById('my-uploads-note');
  const params = new URLSearchParams({ page_size: '20', 'sort[]': '-id' });
  const userId = currentUserId();
  if (userId) params.set('filter{user}', userId);
  let data;
  try {
    data = await getJson(`${api('uploads')}?${params}`);
  } catch (failure) {
    note.textContent = `The uploads could not be read (${failure.message}).`;
    return;
  }
  const rows = (data.uploads || []).map((upload) => {
    const item = el('li', { class: 'my-upload', 'data-state': upload.state });
    const name = upload.title || upload.name || `Upload ${upload.id}`;
    const href = upload.resource ? `${base}/catalogue/#/dataset/${Number(upload.resource)}` : null;
    item.append(href ? el('a', { href }, name) : el('span', {}, name));
    item.append(` — ${STATE_WORDS[upload.state] || String(upload.state).toLowerCase()}`);
    if (upload.date) item.append(el('span', { class: 'my-upload-date' }, ` (${new Date(upload.date).toLocaleString()})`));
    if (upload.error) item.append(el('span', { class: 'my-upload-error' }, `: ${upload.error}`));
    return item;
  });
  list.replaceChildren(...rows);
  note.textContent = rows.length ? `${count(data.total ?? rows.length, 'upload', 'uploads')}.` : 'No uploads yet.';
  list.parentElement.setAttribute('data-ready', 'true');
}

export async function setupUpload(signedIn) {
  const form = document.getElementById('upload-form');
  if (!(await signedIn)) {
    document.getElementById('upload-login').hidden = false;
    return;
  }
  form.hidden = false;
  document.getElementById('my-uploads').hidden = false;
  document.getElementById('my-uploads-refresh').addEventListener('click', showMyUploads);
  showMyUploads();
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
  const heading = document.getElementById('upload-status-heading');
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

  const sendDataset = async (job, title, place) => {
    const { main } = job;
    const progress = startRow(job.entry, `Transfer of ${main.name}`);
    imported.removeAttribute('value');
    message.textContent = `Sending ${main.name}${place}…`;
    const started = await transfer(api('uploads/upload'), uploadForm(job.files, title), (percent) => {
      progress(percent);
      message.textContent = `Sending ${main.name}${place}… ${percent}%`;
    }, job);
    progress(100);
    message.textContent = `${main.name} received; importing…`;
    const status = await follow(started, (s) => { message.textContent = `Importing ${main.name}… (${s.status})`; });
    if (job.cancelled) {
      // Asked while the import ran: what it made is removed now that it has ended.
      await undoImport(started, status);
      throw new Cancelled('cancelled');
    }
    if (status.status !== 'finished') throw new Error(plainError(status));
    imported.value = 100;
    const first = ((status.output_params && status.output_params.resources) || [])[0];
    rowResult(job.entry, ' Published. ');
    if (first && first.id) {
      const href = `${base}/catalogue/#/dataset/${Number(first.id)}`;
      job.href = href;
      rowResult(job.entry, el('a', { href, class: 'upload-dataset-link' }, `Go to the dataset ${title || main.name}`));
    }
  };

  const sendDocument = async (job, title, place) => {
    const file = job.main;
    const progress = startRow(job.entry, `Transfer of ${file.name}`);
    imported.removeAttribute('value');
    message.textContent = `Sending ${file.name}${place}…`;
    const answer = await transfer(api('documents'), documentForm(file, title), (percent) => {
      progress(percent);
      message.textContent = `Sending ${file.name}${place}… ${percent}%`;
    }, job);
    progress(100);
    imported.value = 100;
    const record = answer.document || {};
    const href = safeUrl(record.detail_url)
      || (record.pk || record.id ? `${base}/catalogue/#/document/${Number(record.pk || record.id)}` : null);
    const name = `Open the document ${record.title || file.name}`;
    rowResult(job.entry, ' Added. ', href ? el('a', { href, class: 'upload-document-link' }, name) : '');
  };

  // The row's cancel: before sending, the upload is skipped; while sending, the transfer is
  // aborted; while importing, what the import makes is removed once it ends.
  const cancelButton = (job) => {
    const cancel = el('button', { type: 'button', class: 'upload-cancel', 'aria-label': `Cancel the upload of ${job.main.name}` }, 'Cancel');
    cancel.addEventListener('click', () => {
      job.cancelled = true;
      cancel.disabled = true;
      cancel.textContent = 'Cancelling…';
      if (job.abort) job.abort();
    });
    job.entry.fate.after(' ', cancel);
    job.cancel = cancel;
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
    const entryOf = (file) => chosen.find((e) => e.file === file);
    const jobs = [
      ...current.datasets.map((d) => ({ kind: 'dataset', main: d.main, files: d.files })),
      ...current.documents.map((f) => ({ kind: 'document', main: f, files: [f] })),
    ].map((job) => ({ ...job, entry: entryOf(job.main), cancelled: false, abort: null }));
    const uploads = jobs.length;
    const titleText = document.getElementById('upload-title').value.trim();
    const titleOf = (file) => (titleText && uploads > 1 ? `${titleText} (${file.name})` : titleText);
    section.hidden = false;
    section.removeAttribute('data-done');
    section.setAttribute('aria-busy', 'true');
    button.disabled = true;
    input.disabled = true;
    busy = true;
    sent.value = 0;
    imported.removeAttribute('value');
    for (const job of jobs) cancelButton(job);
    // The progress is below the form: bring it into view and move the focus there.
    heading.focus();
    const failures = [];
    const done = { dataset: 0, document: 0 };
    let cancelled = 0;
    for (const [i, job] of jobs.entries()) {
      sent.value = 0;
      const place = uploads > 1 ? ` (upload ${i + 1} of ${uploads})` : '';
      try {
        if (job.cancelled) throw new Cancelled('cancelled');
        if (job.kind === 'dataset') await sendDataset(job, titleOf(job.main), place);
        else await sendDocument(job, titleOf(job.main), place);
        done[job.kind] += 1;
      } catch (failure) {
        if (failure instanceof Cancelled) {
          cancelled += 1;
          rowResult(job.entry, ' Cancelled: nothing was kept.');
        } else {
          failures.push(uploads > 1 ? `${job.main.name}: ${failure.message}` : failure.message);
          rowResult(job.entry, ' Not uploaded.');
        }
      }
      job.cancel.remove();
    }
    section.removeAttribute('aria-busy');
    button.disabled = false;
    input.disabled = false;
    busy = false;
    showMyUploads();
    const published = jobs.filter((job) => job.href);
    if (published.length === 1) {
      result.setAttribute('href', published[0].href);
      result.hidden = false;
    }
    if (failures.length) {
      imported.value = 0;
      message.textContent = '';
      error.textContent = failures.join(' ');
      error.hidden = false;
      section.setAttribute('data-done', 'failed');
      error.focus();
      return;
    }
    const parts = [];
    if (done.dataset + done.document) parts.push(readyText(done.dataset, done.document));
    if (cancelled) parts.push(cancelled === 1 ? '1 upload was cancelled.' : `${cancelled} uploads were cancelled.`);
    message.textContent = parts.join(' ');
    section.setAttribute('data-done', 'finished');
    message.focus();
  });
}
