//! JSON-RPC 2.0 framing for ACP: the bridge's one JSON-RPC implementation
//! ([`bridge_core::jsonrpc`]), plus ACP's own error codes.

pub use bridge_core::jsonrpc::*;

/// ACP's "authentication required" error code.
pub const AUTH_REQUIRED: i64 = -32000;
