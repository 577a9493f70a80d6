//! The zkforge daemon: the cuzk.v1 `ProvingEngine` gRPC service (what Curio speaks) over the
//! engine, on TCP or a unix socket, with gRPC health and reflection, and the limits that keep
//! one client from exhausting it (`limits`, `listener`, `guard`, `codec`).

// tonic's `Status` is the error type of every RPC; boxing it would only add noise.
#![allow(clippy::result_large_err)]

pub mod pb {
    //! Code generated from `proto/cuzk/v1/proving.proto`.
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("cuzk.v1");

    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("cuzk_v1_descriptor");
}

pub mod access;
mod circuit_id;
pub mod codec;
mod drain;
mod guard;
mod http;
mod job_token;
pub mod limits;
mod listener;
mod log_sample;
mod metrics;
mod parse_gate;
mod receive;
pub mod request;
mod serve;
mod service;
pub mod status;
mod status_json;
mod waiters;
mod wire;

pub use access::{Access, AllowedClients, BadClientNet, ClientNet, TlsFiles};
pub use circuit_id::parse_circuit_id;
pub use http::serve_http;
pub use limits::{Checked as CheckedLimits, Limits};
pub use serve::{serve, serve_with, Listen, Running, ServeOptions, AFTER_DEADLINE};
pub use service::ProvingService;
