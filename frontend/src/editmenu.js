// The resource page's Edit menu: a menu button (the WAI-ARIA menu button pattern) whose items
// each open one editing pane in place under it. Escape or a pane's Cancel closes the pane and
// gives focus back to what opened it. Only the panes offered for the resource's perms are listed.
// Copying changes nothing here, so its pane has its own button beside the menu: someone who may
// copy a resource but not edit it gets no Edit menu.

const button = () => document.getElementById('edit-menu-button');
const list = () => document.getElementById('edit-menu-list');
const menuItems = () => [...list().querySelectorAll('li:not([hidden]) [role="menuitem"]')];
const panes = () => [...document.querySelectorAll('#edit-panel .edit-pane')];
const paneButtons = () => [...document.querySelectorAll('.resource-actions > button[data-pane]')];
let opener = null; // what opened the pane shown now, given focus back when it closes

function setMenuOpen(open, focusItem) {
  button().setAttribute('aria-expanded', String(open));
  list().hidden = !open;
  if (!open) return;
  const items = menuItems();
  if (!items.length) return;
  const index = focusItem === 'last' ? items.length - 1 : 0;
  items.forEach((item, i) => item.setAttribute('tabindex', i === index ? '0' : '-1'));
  items[index].focus();
}

function moveFocus(step) {
  const items = menuItems();
  const at = items.indexOf(document.activeElement);
  let next;
  if (step === 'first') next = 0;
  else if (step === 'last') next = items.length - 1;
  else next = (at + step + items.length) % items.length;
  items.forEach((item, i) => item.setAttribute('tabindex', i === next ? '0' : '-1'));
  items[next].focus();
}

// The open pane's id, or null.
export function openPaneId() {
  const open = panes().find((pane) => !pane.hidden);
  return open ? open.id : null;
}

// Shows one pane (hiding the others) and, unless told not to, moves focus into it: to its
// first field, or for a deletion to its Cancel button (the harmless choice).
export function openPane(id, { focus = true, from = null } = {}) {
  setMenuOpen(false);
  if (from) opener = from;
  for (const pane of panes()) pane.hidden = pane.id !== id;
  const pane = document.getElementById(id);
  pane.setAttribute('data-open', 'true');
  if (!focus) return;
  const target = id === 'delete-section'
    ? document.getElementById('delete-no')
    : pane.querySelector('input:not([type="hidden"]), select, textarea, button');
  (target || pane.querySelector('h2')).focus();
}

export function closePane() {
  for (const pane of panes()) {
    pane.hidden = true;
    pane.removeAttribute('data-open');
  }
  (opener && !opener.closest('[hidden]') ? opener : button()).focus();
}

// Lists the pane's item in the menu (and shows the menu, which has at least that item), or
// shows the pane's own button.
export function offerPane(id) {
  const item = list().querySelector(`li[data-pane="${id}"]`);
  if (item) {
    item.hidden = false;
    document.getElementById('edit-menu').hidden = false;
  } else {
    paneButtons().find((b) => b.dataset.pane === id).hidden = false;
  }
}

// Nothing offered, nothing open: the state before a resource's perms are known.
export function resetEditMenu() {
  document.getElementById('edit-menu').hidden = true;
  setMenuOpen(false);
  for (const item of list().querySelectorAll('li')) item.hidden = true;
  for (const paneButton of paneButtons()) paneButton.hidden = true;
  for (const pane of panes()) {
    pane.hidden = true;
    pane.removeAttribute('data-open');
  }
}

export function setupEditMenu() {
  const menuButton = button();
  if (!menuButton || menuButton.dataset.bound) return;
  menuButton.dataset.bound = 'true';
  menuButton.addEventListener('click', () => {
    setMenuOpen(menuButton.getAttribute('aria-expanded') !== 'true');
  });
  menuButton.addEventListener('keydown', (event) => {
    if (['Enter', ' ', 'ArrowDown', 'ArrowUp'].includes(event.key)) {
      event.preventDefault();
      setMenuOpen(true, event.key === 'ArrowUp' ? 'last' : 'first');
    }
  });
  list().addEventListener('keydown', (event) => {
    const moves = { ArrowDown: 1, ArrowUp: -1, Home: 'first', End: 'last' };
    if (event.key in moves) {
      event.preventDefault();
      moveFocus(moves[event.key]);
    } else if (event.key === 'Escape') {
      event.preventDefault();
      setMenuOpen(false);
      menuButton.focus();
    } else if (event.key === 'Tab') {
      setMenuOpen(false);
    }
  });
  list().addEventListener('click', (event) => {
    const item = event.target.closest('li[data-pane]');
    if (item) openPane(item.dataset.pane, { from: menuButton });
  });
  for (const paneButton of paneButtons()) {
    paneButton.addEventListener('click', () => openPane(paneButton.dataset.pane, { from: paneButton }));
  }
  document.addEventListener('click', (event) => {
    if (!document.getElementById('edit-menu').contains(event.target)) setMenuOpen(false);
  });
  const panel = document.getElementById('edit-panel');
  panel.addEventListener('keydown', (event) => {
    // A select's own list closes on Escape without reaching here; any other Escape closes the pane.
    if (event.key === 'Escape' && openPaneId()) {
      event.preventDefault();
      closePane();
    }
  });
  panel.addEventListener('click', (event) => {
    if (event.target.closest('.edit-cancel')) closePane();
  });
}
