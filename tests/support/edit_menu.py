"""The resource pages' Edit menu as the browser tests use it."""

from __future__ import annotations


def choose_edit(page, item: str) -> None:
    """Opens a resource page's Edit menu with the mouse and chooses ``item`` (its pane opens)."""
    page.locator("#edit-menu-button").click()
    page.get_by_role("menuitem", name=item, exact=True).click()
