//! The proving engine: requests become jobs of partition units that flow
//! queued → synthesizing → awaiting prover → proving → done, through CPU synthesis workers and
//! prover workers joined by bounded priority queues, as many partitions in flight as keep the
//! provers busy (`depth`), under one host-memory budget that follows what the host leaves
//! (`host_memory`, `memory_watch`), with parameters loaded once and kept resident,
//! cancellation, and a TIMELINE event per stage.

mod admission;
mod budget;
mod config;
mod depth;
mod engine;
mod failure;
mod host_memory;
mod job;
mod jobs;
mod memory_watch;
mod params_source;
mod pinned;
mod pipeline;
mod queue;
mod randomness;
mod srs_store;
mod stats;
mod status;
mod telemetry;
mod timeline;
mod workers;

pub use admission::{SubmitError, MAX_REQUEST_ID_BYTES};
pub use budget::{MemoryBudget, RankedWaiter, Reclaimable, Reservation};
pub use config::{
    auto_count, auto_margin, parse_bytes, process_memory, BudgetSetting, EngineConfig, MemInfo,
};
pub use depth::KindDepth;
pub use engine::{Engine, JobRequest};
pub use failure::{kind_of, Failure, FailureKind};
pub use host_memory::{Cgroup, HostReading};
pub use job::{JobId, JobOutcome, JobResult, JobTimings, JobWatch, Priority};
pub use params_source::{
    params_dir_source, probe_writable, ParamsDir, ParamsSource, RecordingsApart,
};
pub use randomness::Randomness;
pub use srs_store::{KeyTier, LoadedSrs};
pub use stats::{Histogram, LatencySeries, Measure, Stage, WorkerId, LATENCY_BUCKETS_SECONDS};
pub use status::{DeviceStatus, EngineStatus, KindCounts, PartitionStatus, WorkerStatus};
pub use timeline::{StageEvent, TimelineEvent};
