// The page scripts, for the asset table (pages/assets). Type-checked by pages/client/tsconfig.json
// with the browser's types; the server program sees only index.d.ts (see package.json here).
export { commonClient } from './common'
export { authClient } from './auth'
export { dashboardClient } from './dashboard'
export { poolClient } from './pool'
export { poolManageClient } from './pool-manage'
export { profileClient } from './profile'
export { adminUsersClient } from './admin-users'
export { adminPoolsClient } from './admin-pools'
export { joinClient } from './join'
export { inferenceClient } from './inference'
export { jobClient } from './job'
export { adminAuditClient } from './admin-audit'
