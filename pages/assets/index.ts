// Static assets served from the binary. Page scripts are real functions (type-checked with the DOM
// library by pages/client/tsconfig.json) turned into source with toString(), so no bundling step or
// file lookup exists at run time and `bun build --compile` carries them like any other code.
import { CSS, ICON_SVG } from './style'
import { stringsScript } from '../client-strings'
// A directory import: Bun runs client/index.ts, TypeScript sees client/index.d.ts (client/package.json).
import { commonClient, authClient, dashboardClient, poolClient, poolManageClient, profileClient, adminUsersClient, adminPoolsClient, joinClient, inferenceClient, jobClient, adminAuditClient, consoleClient, fellowClient, poolConsoleClient, poolUploadClient, sha256Client } from '../client'
// The charting library, kept as a dependency and served from the binary (no CDN): uPlot's browser
// build defines the global uPlot; its stylesheet is appended to app.css.
import UPLOT_JS from 'uplot/dist/uPlot.iife.min.js' with { type: 'text' }
import UPLOT_CSS from 'uplot/dist/uPlot.min.css' with { type: 'text' }

export interface Asset {
  body: string
  type: string
}

const js = (fn: () => void): Asset => ({ body: `'use strict';\n(${fn.toString()})();\n`, type: 'text/javascript; charset=utf-8' })

export const ASSETS: Record<string, Asset> = {
  'app.css': { body: CSS + '\n' + UPLOT_CSS + '\n', type: 'text/css; charset=utf-8' },
  'icon.svg': { body: ICON_SVG, type: 'image/svg+xml' },
  'strings-en.js': { body: stringsScript('en'), type: 'text/javascript; charset=utf-8' },
  'strings-de.js': { body: stringsScript('de'), type: 'text/javascript; charset=utf-8' },
  'app.js': js(commonClient),
  'auth.js': js(authClient),
  'dashboard.js': js(dashboardClient),
  'pool.js': js(poolClient),
  'pool-manage.js': js(poolManageClient),
  'profile.js': js(profileClient),
  'admin-users.js': js(adminUsersClient),
  'admin-pools.js': js(adminPoolsClient),
  'join.js': js(joinClient),
  'inference.js': js(inferenceClient),
  'job.js': js(jobClient),
  'admin-audit.js': js(adminAuditClient),
  'uplot.js': { body: UPLOT_JS, type: 'text/javascript; charset=utf-8' },
  'console.js': js(consoleClient),
  'fellow.js': js(fellowClient),
  'pool-console.js': js(poolConsoleClient),
  'pool-upload.js': js(poolUploadClient),
  'sha256.js': { body: `'use strict';\nwindow.svcSha256 = (${sha256Client.toString()})();\n`, type: 'text/javascript; charset=utf-8' },
}

/** Changes whenever any asset changes: appended as ?v= so browsers may cache assets for long. */
export const ASSET_VERSION = Bun.hash(Object.values(ASSETS).map((a) => a.body).join('\0')).toString(36).slice(0, 10)
