//! Transport and wire types of the DeepSeek Harness SDK protocol.
//!
//! The protocol is JSON-RPC 2.0 over stdio, one compact JSON object per
//! `\n`-terminated line in each direction. This crate holds everything that
//! is about the wire and nothing about agents:
//!
//! * [`LineReader`] splits an input byte stream into lines (any length, memory
//!   bounded by the line being read, `\r\n` and blank lines tolerated);
//! * [`classify`] turns one line into an [`Incoming`] frame the way the
//!   official runtime does (garbage and non-objects are ignored, never
//!   answered; `params` that are not an object become `{}`), reading JSON
//!   as JavaScript's `JSON.parse` does ([`lenient`]); a line that is not
//!   JSON but has a readable `id` is answered with an error;
//! * [`surrogates`] carries lone UTF-16 surrogates (`"\ud800"`) through
//!   Rust strings and back out as escapes, exactly;
//! * [`FrameWriter`] is the one writer of the protocol fd: whole frames, in
//!   order, flushed;
//! * [`Outgoing`] builds the exact bytes of responses, error responses and
//!   notifications (compact JSON, key order as the official runtime, one
//!   trailing `\n`);
//! * [`methods`] and [`notifications`] hold typed serde structs for every
//!   method's params (with their validation) and result and the four notifications;
//! * [`schema`] is the JSON Schema of all of it, generated from these
//!   types (`dsh --print-schema`);
//! * [`catalog`] is the event vocabulary: one payload type per session
//!   event, the [`SessionEvent`](catalog::SessionEvent) envelope, and the
//!   [`message`]s the events carry.
//!
//! ```
//! use dsh_protocol::{classify, Incoming};
//! let frame = classify(br#"{"jsonrpc":"2.0","id":7,"method":"initialize"}"#);
//! match frame {
//!     Incoming::Request(req) => {
//!         assert_eq!(req.method, "initialize");
//!         assert!(req.params.is_empty()); // absent params become {}
//!         assert_eq!(req.id.to_string(), "7");
//!     }
//!     other => panic!("unexpected {other:?}"),
//! }
//! ```
//!
//! # Layers
//!
//! Layer 1 is the bottom; a module uses only those in its layer or below
//! (`dsh-repo-checks`' layering test holds this list to the code):
//!
//! 1. `surrogates`, `id`, `reader`, `escape` — lone surrogates carried
//!    through strings; request ids; the line reader; JSON string escaping
//!    eight bytes at a time
//! 2. `message`, `lenient`, `rope` — the messages events carry; JSON read
//!    as `JSON.parse` reads it; serialised JSON kept in shared segments
//! 3. `catalog`, `methods` — the event vocabulary; every method's params
//!    and result
//! 4. `notifications` — the four notifications
//! 5. `outgoing`, `schema` — the exact bytes of responses, errors and
//!    notifications; the JSON Schema of every method, notification and
//!    event
//! 6. `writer`, `id_scan` — the one writer of the protocol fd; the id of a
//!    line that is not JSON
//! 7. `incoming` — a line read as the official runtime reads it

mod escape;
mod id;
mod id_scan;
mod incoming;
mod outgoing;
mod reader;
mod rope;
mod writer;

pub mod catalog;
pub mod lenient;
pub mod message;
pub mod methods;
pub mod notifications;
/// The JSON Schema of every method, notification and event payload,
/// generated from the wire types.
pub mod schema;
pub mod surrogates;

pub use id::RequestId;
pub use id_scan::recover_id;
pub use incoming::{ClientResponse, Ignored, Incoming, InvalidLine, Request, classify};
pub use outgoing::{INTERNAL_ERROR, Outgoing};
pub use reader::LineReader;
pub use rope::{JsonRope, SHARE_MIN, to_rope, to_rope_sharing};
pub use writer::FrameWriter;

/// A JSON object as carried on the wire, with its key order preserved.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;
