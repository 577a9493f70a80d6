//! Whether a proving key and one of its partitions can ever fit a device's memory budget, by
//! the rules a GPU backend places keys with today: resident when the aux-side bases and the
//! matrices fit with room for `headroom_partitions` partitions beside them, else streamed from
//! host memory with the matrices and one partition resident. Decided from the key's lengths and
//! its matrices before the key is read, so that a job that can never run is refused at once,
//! with what it needs and what there is, instead of after a minute of loading and a partition's
//! synthesis.

use std::fmt;

/// Device bytes a key of some lengths needs on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceNeeds {
    /// The key's aux-side bases (what a resident key holds).
    pub bases: u64,
    /// The circuit's recorded matrices (resident whenever the constraint products are
    /// computed on the device).
    pub matrices: u64,
    /// One partition's working memory as the backend reserves it.
    pub partition: u64,
}

/// Where a backend may put a key's bases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyPolicy {
    /// The bases may stay resident in device memory.
    pub resident: bool,
    /// The bases may be streamed from host memory (the key is decoded there, not left in its
    /// file).
    pub streamed: bool,
    /// Partitions whose working memory must stay free beside a resident key.
    pub headroom_partitions: u64,
}

/// Where a key's bases will be, if it fits at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySite {
    Resident,
    Streamed,
}

/// Why a key cannot run on a device: what each placement it may take needs, and the budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceShortfall {
    pub needs: DeviceNeeds,
    pub policy: KeyPolicy,
    pub budget: u64,
}

impl DeviceNeeds {
    /// Bytes a resident key needs: bases, matrices and the partitions kept free beside them.
    pub fn resident(&self, headroom_partitions: u64) -> u64 {
        self.bases + self.matrices + headroom_partitions * self.partition
    }

    /// Bytes a streamed key needs on the device: the matrices and one partition (its chunks
    /// share the partition's room).
    pub fn streamed(&self) -> u64 {
        self.matrices + self.partition
    }
}

/// Where the key goes on a device whose budget is `budget` bytes, or why it cannot run there.
pub fn key_site(
    budget: u64,
    needs: &DeviceNeeds,
    policy: &KeyPolicy,
) -> Result<KeySite, DeviceShortfall> {
    if policy.resident && needs.resident(policy.headroom_partitions) <= budget {
        return Ok(KeySite::Resident);
    }
    if policy.streamed && needs.streamed() <= budget {
        return Ok(KeySite::Streamed);
    }
    Err(DeviceShortfall {
        needs: *needs,
        policy: *policy,
        budget,
    })
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

impl fmt::Display for DeviceShortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = &self.needs;
        let h = self.policy.headroom_partitions;
        write!(
            f,
            "the key's {} of bases, {} of matrices and partitions of {} each",
            gib(n.bases),
            gib(n.matrices),
            gib(n.partition)
        )?;
        let mut ways = Vec::new();
        if self.policy.resident {
            ways.push(format!(
                "{} resident (bases, matrices, {h} partition(s))",
                gib(n.resident(h))
            ));
        }
        if self.policy.streamed {
            ways.push(format!(
                "{} streamed from host memory (matrices, 1 partition)",
                gib(n.streamed())
            ));
        }
        if ways.is_empty() {
            write!(f, " may be neither resident nor streamed")?;
        } else {
            write!(f, " need {}", ways.join(", or "))?;
        }
        write!(f, "; the device's budget is {}", gib(self.budget))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// A 32 GiB PoRep key on a GPU as the CUDA backend sizes it today: 44.12 GiB of bases,
    /// 6.84 GiB of matrices, a partition reserving 29.94 GiB (all its scalars and the largest
    /// MSM's scratch).
    fn porep_32g() -> DeviceNeeds {
        DeviceNeeds {
            bases: 44_120 * GIB / 1000,
            matrices: 6_840 * GIB / 1000,
            partition: 29_940 * GIB / 1000,
        }
    }

    const AUTO: KeyPolicy = KeyPolicy {
        resident: true,
        streamed: true,
        headroom_partitions: 2,
    };

    #[test]
    fn a_full_card_keeps_the_key_resident_a_48_gib_one_streams_it() {
        // The H200: 141 GiB free, less the 2 GiB margin.
        assert_eq!(
            key_site(139 * GIB, &porep_32g(), &AUTO),
            Ok(KeySite::Resident)
        );
        // 48 GiB free: 36.78 GiB streamed fits 46 GiB.
        assert_eq!(
            key_site(46 * GIB, &porep_32g(), &AUTO),
            Ok(KeySite::Streamed)
        );
        // A key left in its file cannot be streamed: resident or nothing.
        let file = KeyPolicy {
            streamed: false,
            ..AUTO
        };
        assert!(key_site(46 * GIB, &porep_32g(), &file).is_err());
    }

    #[test]
    fn a_24_gib_card_is_refused_with_what_it_needs_and_what_there_is() {
        // Issue 35's 24 GiB card: a budget of 21.48 GiB.
        let budget = 21_480 * GIB / 1000;
        let no = key_site(budget, &porep_32g(), &AUTO).unwrap_err();
        let msg = no.to_string();
        for part in [
            "44.12 GiB of bases",
            "6.84 GiB of matrices",
            "29.94 GiB each",
            "110.84 GiB resident",
            "36.78 GiB streamed from host memory",
            "budget is 21.48 GiB",
        ] {
            assert!(msg.contains(part), "{part:?} missing: {msg}");
        }
        // params_residency = "vram": only the resident need is named.
        let vram = KeyPolicy {
            streamed: false,
            headroom_partitions: 1,
            ..AUTO
        };
        let msg = key_site(budget, &porep_32g(), &vram)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("80.90 GiB resident") && !msg.contains("streamed"),
            "{msg}"
        );
    }

    #[test]
    fn the_boundaries_are_inclusive() {
        let n = DeviceNeeds {
            bases: 10,
            matrices: 5,
            partition: 20,
        };
        assert_eq!(key_site(55, &n, &AUTO), Ok(KeySite::Resident));
        assert_eq!(key_site(54, &n, &AUTO), Ok(KeySite::Streamed));
        assert_eq!(key_site(25, &n, &AUTO), Ok(KeySite::Streamed));
        assert!(key_site(24, &n, &AUTO).is_err());
    }
}
