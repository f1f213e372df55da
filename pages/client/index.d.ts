// What the server sees of the page scripts: functions it serialises with toString(). Keeping the
// browser's types (lib "dom") out of the server program is the point of this stub.
export declare function commonClient(): void
export declare function authClient(): void
export declare function dashboardClient(): void
export declare function poolClient(): void
export declare function poolManageClient(): void
export declare function profileClient(): void
export declare function adminUsersClient(): void
export declare function adminPoolsClient(): void
export declare function joinClient(): void
export declare function inferenceClient(): void
export declare function jobClient(): void
export declare function adminAuditClient(): void
export declare function consoleClient(): void
export declare function fellowClient(): void
export declare function poolConsoleClient(): void
export declare function poolUploadClient(): void
export declare function sha256Client(): () => { update(data: Uint8Array): void; hex(): string }
