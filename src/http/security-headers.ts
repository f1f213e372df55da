// Headers every HTML page and its scripts carry, whichever feature serves them (pages/, the API
// reference at /api/v1/docs): no sniffing, no framing, no Referer to other sites.
export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  // same-origin: /lang needs the Referer of our own pages; nothing leaks to other sites.
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
}

/** The parts of a page's Content-Security-Policy that do not depend on the page. */
export const BASE_CSP = ["object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'"]
