//! The daemon's TOML configuration and `zkforge config print`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use zkforge_cuda::host::MsmOptions;
use zkforge_cuda::CudaOptions;
use zkforge_engine::{parse_bytes, EngineConfig};
use zkforge_filecoin::{registry, ParamsId};
use zkforge_server::access::read_token_file;
use zkforge_server::{parse_circuit_id, Access, ClientNet, Limits, TlsFiles};

use super::cuzk_config::{self, Translation};

/// The `[daemon]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonSection {
    pub listen: String,
    pub http_listen: String,
    pub params: String,
    pub backend: String,
    pub shutdown_deadline_secs: u64,
    pub tls_cert: String,
    pub tls_key: String,
    pub tls_client_ca: String,
    pub auth_token_file: String,
    pub insecure_remote: bool,
    pub allow_clients: Vec<String>,
    pub preload: Vec<String>,
    pub verify_params: bool,
}

impl Default for DaemonSection {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9820".into(),
            http_listen: String::new(),
            params: String::new(),
            backend: "auto".into(),
            shutdown_deadline_secs: 30,
            tls_cert: String::new(),
            tls_key: String::new(),
            tls_client_ca: String::new(),
            auth_token_file: String::new(),
            insecure_remote: false,
            allow_clients: Vec::new(),
            preload: Vec::new(),
            verify_params: false,
        }
    }
}

impl DaemonSection {
    /// The parameter sets named by `preload`, each bad name reported with its entry.
    pub fn preload_ids(&self) -> Result<Vec<ParamsId>> {
        let id = |name: &str| {
            let (kind, size) = parse_circuit_id(name)?;
            registry::params_id(kind, size)
        };
        let named = |(i, name): (usize, &String)| {
            id(name).with_context(|| format!("daemon.preload[{i}] = {name:?}"))
        };
        self.preload.iter().enumerate().map(named).collect()
    }

    /// Who may connect, from the TLS and token settings (files read here, errors named).
    pub fn access(&self) -> Result<Access> {
        let path = |s: &str| (!s.is_empty()).then(|| PathBuf::from(s));
        let tls = match (path(&self.tls_cert), path(&self.tls_key)) {
            (Some(cert), Some(key)) => Some(TlsFiles {
                cert,
                key,
                client_ca: path(&self.tls_client_ca),
            }),
            (None, None) if self.tls_client_ca.is_empty() => None,
            _ => anyhow::bail!(
                "daemon.tls_cert and daemon.tls_key go together (daemon.tls_client_ca needs both)"
            ),
        };
        let bearer_token = path(&self.auth_token_file)
            .map(|p| read_token_file(&p).context("daemon.auth_token_file"))
            .transpose()?;
        let allow_clients = self
            .allow_clients
            .iter()
            .enumerate()
            .map(|(i, entry)| {
                entry
                    .parse::<ClientNet>()
                    .with_context(|| format!("daemon.allow_clients[{i}]"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Access {
            tls,
            bearer_token,
            insecure_remote: self.insecure_remote,
            allow_clients,
        })
    }
}

/// The `[gpu]` table: what the CUDA backend uses (ignored by the CPU backend).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GpuSection {
    pub devices: String,
    pub vram_margin: String,
    pub params_residency: String,
    pub staging_pool: String,
    /// MSM window width in bits; 0: the cost model's choice per MSM size.
    pub msm_window_bits: u32,
    /// Windows whose buckets one batch fills; 0: as many as the batch's memory caps allow.
    pub msm_windows_per_batch: u32,
    /// Least sorted entries one accumulation thread adds; 0: the chunk sizing's own choice.
    pub msm_min_chunk: u32,
    /// Each MSM's per-phase device times on stderr.
    pub msm_profile: bool,
    /// Bases per chunk of a streamed MSM.
    pub stream_chunk: usize,
}

impl Default for GpuSection {
    fn default() -> Self {
        Self {
            devices: "all".into(),
            vram_margin: "2GiB".into(),
            params_residency: "auto".into(),
            staging_pool: "32GiB".into(),
            msm_window_bits: 0,
            msm_windows_per_batch: 0,
            msm_min_chunk: 0,
            msm_profile: false,
            stream_chunk: CudaOptions::default().stream_chunk,
        }
    }
}

/// Widest MSM window the kernels take (2^21 bucket slots a window with signed digits).
const MAX_MSM_WINDOW_BITS: u32 = 22;

impl GpuSection {
    /// The typed options, with each bad value named.
    pub fn options(&self) -> Result<CudaOptions> {
        let err = |e: String| anyhow::anyhow!(e);
        anyhow::ensure!(
            self.msm_window_bits <= MAX_MSM_WINDOW_BITS,
            "gpu.msm_window_bits = {} is above {MAX_MSM_WINDOW_BITS} (0: the cost model's choice)",
            self.msm_window_bits
        );
        anyhow::ensure!(self.stream_chunk > 0, "gpu.stream_chunk must be at least 1");
        let auto = |v: u32| (v > 0).then_some(v);
        Ok(CudaOptions {
            devices: zkforge_cuda::parse_devices(&self.devices).map_err(err)?,
            vram_margin: parse_bytes(&self.vram_margin).context("gpu.vram_margin")?,
            residency: self.params_residency.parse().map_err(err)?,
            staging_pool_bytes: parse_bytes(&self.staging_pool).context("gpu.staging_pool")?,
            msm: MsmOptions {
                window_bits: auto(self.msm_window_bits),
                windows_per_batch: auto(self.msm_windows_per_batch),
                min_chunk: self.msm_min_chunk,
                profile: self.msm_profile,
                ..MsmOptions::default()
            },
            stream_chunk: self.stream_chunk,
            resident_items: None,
        })
    }

    pub fn describe(&self) -> Vec<String> {
        vec![
            format!("devices = {:?}", self.devices),
            format!("vram_margin = {:?}", self.vram_margin),
            format!("params_residency = {:?}", self.params_residency),
            format!("staging_pool = {:?}", self.staging_pool),
            format!("msm_window_bits = {}", self.msm_window_bits),
            format!("msm_windows_per_batch = {}", self.msm_windows_per_batch),
            format!("msm_min_chunk = {}", self.msm_min_chunk),
            format!("msm_profile = {}", self.msm_profile),
            format!("stream_chunk = {}", self.stream_chunk),
        ]
    }
}

/// A whole configuration file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub daemon: DaemonSection,
    pub limits: Limits,
    pub engine: EngineConfig,
    pub gpu: GpuSection,
}

impl Config {
    /// Reads `path`, or the defaults when there is none.
    pub fn load(path: Option<&Path>) -> Result<Self> {
        Ok(Self::read(path)?.0)
    }

    /// Reads `path`, a native file or cuzk's (`cuzk_config`: then also what each of its keys
    /// became), or the defaults when there is none.
    pub fn read(path: Option<&Path>) -> Result<(Self, Option<Translation>)> {
        let Some(path) = path else {
            return Ok((Self::default(), None));
        };
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let file: toml::Table = text
            .parse()
            .with_context(|| format!("{}", path.display()))?;
        if cuzk_config::is_cuzk(&file) {
            let t = cuzk_config::translate(file)
                .with_context(|| format!("{} (read as a cuzk file)", path.display()))?;
            return Ok((t.config.clone(), Some(t)));
        }
        let config = toml::from_str(&text).with_context(|| format!("{}", path.display()))?;
        Ok((config, None))
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("the configuration serializes")
    }

    /// Every check the daemon makes of its settings before starting, each error named.
    pub fn check(&self) -> Result<()> {
        self.engine.validate()?;
        self.limits.check()?;
        self.gpu.options()?;
        let d = &self.daemon;
        let listen: zkforge_server::Listen = d.listen.parse().context("daemon.listen")?;
        self.daemon
            .access()?
            .check(&listen)
            .context("daemon.listen")?;
        if !d.http_listen.is_empty() {
            d.http_listen
                .parse::<std::net::SocketAddr>()
                .with_context(|| {
                    format!("daemon.http_listen {:?} is not host:port", d.http_listen)
                })?;
        }
        <super::backend::BackendArg as clap::ValueEnum>::from_str(&d.backend, true)
            .map_err(|e| anyhow::anyhow!("daemon.backend = {:?}: {e}", d.backend))?;
        d.preload_ids()?;
        Ok(())
    }
}

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration (defaults, then the file: native or cuzk's).
    Print(PrintArgs),
    /// Print the native configuration a cuzk file (Curio's cuzk.toml) amounts to, each key
    /// commented with the cuzk key it came from; cuzk keys that set nothing are listed with why.
    FromCuzk(FromCuzkArgs),
}

#[derive(Args)]
pub struct PrintArgs {
    #[arg(long)]
    config: Option<PathBuf>,
}

#[derive(Args)]
pub struct FromCuzkArgs {
    /// The cuzk configuration file.
    file: PathBuf,
}

pub fn run(cmd: ConfigCommand) -> Result<()> {
    match cmd {
        ConfigCommand::Print(args) => {
            let config = Config::load(args.config.as_deref())?;
            config.check()?;
            print!("{}", config.to_toml());
        }
        ConfigCommand::FromCuzk(args) => {
            let path = args.file.as_path();
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let file: toml::Table = text
                .parse()
                .with_context(|| format!("{}", path.display()))?;
            let t = cuzk_config::translate(file)
                .with_context(|| format!("{} (read as a cuzk file)", path.display()))?;
            print!("{}", cuzk_config::native_toml(&t));
            if let Err(e) = t.config.check() {
                eprintln!("note: the daemon would refuse this configuration as it is: {e:#}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "config_fuzz.rs"]
mod fuzz_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_settings_are_checked() {
        let d = |f: fn(&mut DaemonSection)| {
            let mut c = Config::default();
            f(&mut c.daemon);
            c
        };
        assert!(Config::default().check().is_ok());
        let half_tls = d(|d| d.tls_cert = "server.pem".into());
        assert!(format!("{:#}", half_tls.check().unwrap_err()).contains("go together"));
        let open = d(|d| d.listen = "0.0.0.0:9820".into());
        assert!(format!("{:#}", open.check().unwrap_err()).contains("--insecure-remote"));
        let told = d(|d| {
            d.listen = "0.0.0.0:9820".into();
            d.insecure_remote = true;
        });
        assert!(told.check().is_ok());
        let listed = d(|d| {
            d.listen = "0.0.0.0:9820".into();
            d.allow_clients = vec!["10.0.0.5/32".into(), "fd00::/8".into()];
        });
        assert!(listed.check().is_ok());
        let typo = d(|d| d.allow_clients = vec!["10.0.0.5/32".into(), "10.0.0.300".into()]);
        let err = format!("{:#}", typo.check().unwrap_err());
        assert!(
            err.contains("daemon.allow_clients[1]") && err.contains("\"10.0.0.300\""),
            "{err}"
        );
        let missing = d(|d| d.auth_token_file = "/no/such/token".into());
        assert!(format!("{:#}", missing.check().unwrap_err()).contains("auth_token_file"));
    }

    #[test]
    fn the_example_file_states_the_defaults() {
        let text = include_str!("../../../../zkforge.example.toml");
        let parsed: Config = toml::from_str(text).unwrap();
        assert_eq!(
            parsed,
            Config::default(),
            "zkforge.example.toml drifted from the defaults"
        );
        assert_eq!(toml::from_str::<Config>(&parsed.to_toml()).unwrap(), parsed);
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = toml::from_str::<Config>("[engine]\nsynthesis_wrokers = 3\n").unwrap_err();
        assert!(err.to_string().contains("synthesis_wrokers"), "{err}");
        let err = toml::from_str::<Config>("[demon]\n").unwrap_err();
        assert!(err.to_string().contains("demon"), "{err}");
    }

    #[test]
    fn gpu_settings_are_checked() {
        let gpu = GpuSection::default().options().unwrap();
        assert_eq!(gpu, CudaOptions::default());
        // Each bad setting is refused with an error that names it.
        let refused = |set: fn(&mut GpuSection), named: &str| {
            let mut bad = GpuSection::default();
            set(&mut bad);
            let err = format!("{:#}", bad.options().unwrap_err());
            assert!(err.contains(named), "{err}");
        };
        refused(|g| g.params_residency = "disk".into(), "disk");
        refused(|g| g.vram_margin = "lots".into(), "vram_margin");
        refused(|g| g.msm_window_bits = 23, "msm_window_bits");
        refused(|g| g.stream_chunk = 0, "stream_chunk");
    }

    #[test]
    fn msm_settings_reach_the_cuda_options() {
        let text = "[gpu]\nmsm_window_bits = 9\nmsm_windows_per_batch = 3\nmsm_min_chunk = 64\n\
                    msm_profile = true\nstream_chunk = 3000\n";
        let gpu = toml::from_str::<Config>(text)
            .unwrap()
            .gpu
            .options()
            .unwrap();
        assert_eq!(
            gpu.msm,
            MsmOptions {
                window_bits: Some(9),
                windows_per_batch: Some(3),
                min_chunk: 64,
                profile: true,
                ..MsmOptions::default()
            }
        );
        assert_eq!(gpu.stream_chunk, 3000);
    }
}
