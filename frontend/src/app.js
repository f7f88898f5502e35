// Cartotheca's web pages: everything shown comes from the public API (/api/v2/...) and the
// built-in map server (/ows). Text from the API is only ever set with textContent; URLs only
// after checking their scheme.
import 'ol/ol.css';
import './app.css';
import './maps.css';
import {
  setupAccountNav, setupLogin, setupLogout, setupPasswordReset, setupPasswordResetKey, setupProfile, setupSignup,
} from './account.js';
import { configureCatalogue, search, setupSearch } from './catalogue.js';
import { resourceRoute, showResource } from './resource.js';
import { setupComposer } from './composer.js';
import { setupDashboard } from './dashboard.js';
import { setupUpload } from './upload.js';
import { setupApplications } from './applications.js';
import { setupMenu } from './menu.js';

let routed = null;

function route() {
  // A change of the hash fires both popstate and hashchange: route each address once.
  if (window.location.href === routed) return;
  routed = window.location.href;
  const target = resourceRoute();
  if (target) {
    showResource(target);
  } else {
    document.getElementById('resource-view').hidden = true;
    document.getElementById('search-view').hidden = false;
    search();
  }
}

function start() {
  const page = document.body.dataset.page;
  setupMenu();
  const signedIn = setupAccountNav();
  if (page === 'catalogue') {
    configureCatalogue(signedIn, () => { routed = window.location.href; });
    setupSearch();
    window.addEventListener('popstate', route);
    window.addEventListener('hashchange', route);
    route();
  } else if (page === 'login') {
    setupLogin();
  } else if (page === 'logout') {
    setupLogout();
  } else if (page === 'password-reset') {
    setupPasswordReset();
  } else if (page === 'password-reset-key') {
    setupPasswordResetKey();
  } else if (page === 'signup') {
    setupSignup();
  } else if (page === 'profile') {
    setupProfile();
  } else if (page === 'upload') {
    setupUpload(signedIn);
  } else if (page === 'composer') {
    setupComposer(signedIn);
  } else if (page === 'dashboard') {
    setupDashboard(signedIn);
  } else if (page === 'applications') {
    setupApplications(signedIn);
  }
}

start();
