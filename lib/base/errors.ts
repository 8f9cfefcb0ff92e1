/**
 * Local errors: failures of mcpx itself (bad config, an upstream that cannot start, shutdown).
 * They carry a stable `MCPX_ERR_*` code and never cross the wire; wire errors are JSON-RPC
 * error objects built in lib/protocol/jsonrpc.ts.
 */
export type McpxErrorCode =
  | 'MCPX_ERR_CONFIG'
  | 'MCPX_ERR_UPSTREAM'
  | 'MCPX_ERR_UNSAFE_BIND'
  | 'MCPX_ERR_USAGE'

export class McpxError extends Error {
  /**
   * @param code stable machine-readable code
   * @param message starts with `mcpx:` and names what is wrong
   * @param options.cause the error being wrapped, if any
   */
  constructor (readonly code: McpxErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'McpxError'
  }
}
