// The header's menu button: on narrow screens the site's links fold behind it (CSS decides when
// the button shows); Escape closes the menu and returns focus to the button.

export function setupMenu() {
  const button = document.getElementById('menu-button');
  const header = button && button.closest('.site-header');
  if (!header) return;
  const setOpen = (open) => {
    button.setAttribute('aria-expanded', String(open));
    header.classList.toggle('menu-open', open);
  };
  button.addEventListener('click', () => setOpen(button.getAttribute('aria-expanded') !== 'true'));
  header.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && button.getAttribute('aria-expanded') === 'true') {
      setOpen(false);
      button.focus();
    }
  });
  // A click elsewhere on the page folds the menu away again.
  document.addEventListener('click', (event) => {
    if (!header.contains(event.target)) setOpen(false);
  });
}
