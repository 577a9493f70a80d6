//! Job ids as the wire carries them: `<job number>-<token>`, where the token is a keyed hash
//! of the number under a secret drawn when the daemon starts. The engine numbers jobs 1, 2,
//! 3, …; a client that could cancel or await job 7 by sending "7" could cancel every job on
//! the machine (any local process can connect). The id handed back by SubmitProof is the
//! capability: only a client that was given it — the submitter, or whom it told — can name
//! the job. Job numbers alone (in GetStatus, /status, the logs) name nothing.

use sha2::{Digest, Sha256};
use zkforge_engine::JobId;

/// Hex digits of the token: 128 bits, beyond guessing over any number of RPCs.
const TOKEN_HEX: usize = 32;

/// The daemon's secret and the ids it makes.
pub struct JobTokens {
    secret: [u8; 32],
}

impl JobTokens {
    /// A fresh secret from the operating system's generator.
    pub fn new() -> Self {
        use rand::RngCore;
        let mut secret = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut secret);
        Self { secret }
    }

    fn token(&self, job: JobId) -> String {
        let mut h = Sha256::new();
        h.update(self.secret);
        h.update(job.to_le_bytes());
        let digest = h.finalize();
        digest[..TOKEN_HEX / 2]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The wire id of `job`.
    pub fn id(&self, job: JobId) -> String {
        format!("{job}-{}", self.token(job))
    }

    /// The job a wire id names, if it is one this daemon made.
    pub fn job(&self, id: &str) -> Option<JobId> {
        let (number, token) = id.split_once('-')?;
        let job: JobId = number.parse().ok()?;
        // Compared in constant time: a timing channel must not reveal a token's prefix.
        let expected = self.token(job);
        let same = token.len() == expected.len()
            && token
                .bytes()
                .zip(expected.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        same.then_some(job)
    }
}

impl Default for JobTokens {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_ids_handed_out_name_jobs() {
        let tokens = JobTokens::new();
        let id = tokens.id(7);
        assert!(id.starts_with("7-") && id.len() == 2 + TOKEN_HEX, "{id}");
        assert_eq!(tokens.job(&id), Some(7));
        assert_eq!(tokens.job("7"), None, "a bare job number");
        assert_eq!(
            tokens.job(&tokens.id(8).replace("8-", "7-")),
            None,
            "another job's token"
        );
        let mut flipped = id.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        assert_eq!(tokens.job(std::str::from_utf8(&flipped).unwrap()), None);
        assert_eq!(JobTokens::new().job(&id), None, "another daemon's id");
        assert_eq!(tokens.job(""), None);
        assert_eq!(tokens.job("x-y"), None);
    }
}
