// Placeholder until the page is written.
export function setupComposer() {}
