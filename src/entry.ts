// Entry of the compiled binary. Elysia decides when it is imported whether to pretty-print the
// refused value into every validation error; outside production that cost about a second of CPU
// for a 1 MiB body of the wrong shape (a cheap denial of service). The shipped binary therefore
// runs in production mode unless the operator says otherwise.
process.env.NODE_ENV ??= 'production'
await import('./main')
export {}
