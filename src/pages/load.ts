// The pages (./handlers.tsx with pages/*: their markup, texts, scripts and styles) load with the
// first page a browser asks for, once; a leader that only serves fellows and the API never loads them.
let loaded: Promise<typeof import('./handlers')> | null = null

export const pagesModule = () => (loaded ??= import('./handlers'))
