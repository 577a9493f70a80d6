//! Which GPUs this binary's kernels run on: the SASS archs and the PTX that build.rs compiled
//! into the fatbin (`ZKFORGE_CUDA_ARCHS`, default in build.rs), and what a card of a given
//! compute capability gets from them. Built without the `cuda` feature too, so that
//! `zkforge doctor` and its tests read the same answer on any machine.

/// How a card runs this binary's kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeFor {
    /// Machine code compiled for `sm` (the card's own arch, or an older minor of its major:
    /// SASS runs on later minors of the same major).
    Native { sm: u32 },
    /// No SASS for the card: the driver compiles the PTX of `compute` at first use (minutes
    /// for these kernels), into the user's CUDA cache (`CUDA_CACHE_PATH`).
    Jit { compute: u32 },
    /// Neither SASS nor PTX it can use: the kernels do not load on this card.
    None,
}

/// The archs (`86` for sm_86) this binary carries SASS for; empty in a build without kernels.
pub fn sass() -> Vec<u32> {
    parse_list(env!("ZKFORGE_CUDA_SASS"))
}

/// The arch of the PTX this binary carries, if any.
pub fn ptx() -> Option<u32> {
    env!("ZKFORGE_CUDA_PTX").parse().ok()
}

/// What a card of compute capability `major.minor` runs in this binary.
pub fn code_for(major: u32, minor: u32) -> CodeFor {
    code_for_in(&sass(), ptx(), major, minor)
}

/// [`code_for`] for a fatbin of `sass` and `ptx`. SASS for sm_XY runs on sm_XZ for Z ≥ Y
/// (the newest such is what the driver picks); PTX of compute_N is compiled for any card of
/// capability N or later.
pub fn code_for_in(sass: &[u32], ptx: Option<u32>, major: u32, minor: u32) -> CodeFor {
    let card = major * 10 + minor;
    let native = sass
        .iter()
        .copied()
        .filter(|&a| a / 10 == major && a <= card)
        .max();
    match (native, ptx) {
        (Some(sm), _) => CodeFor::Native { sm },
        (None, Some(p)) if p <= card => CodeFor::Jit { compute: p },
        _ => CodeFor::None,
    }
}

fn parse_list(s: &str) -> Vec<u32> {
    s.split(',').filter_map(|a| a.trim().parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: [u32; 7] = [75, 80, 86, 89, 90, 100, 120];

    #[test]
    fn each_card_gets_its_own_sass_a_later_minor_an_older_one_and_a_newer_major_the_ptx() {
        let at = |sass: &[u32], ptx, cc: (u32, u32)| code_for_in(sass, ptx, cc.0, cc.1);
        // The default build: every card a provider owns runs natively.
        for (cc, sm) in [((7, 5), 75), ((8, 6), 86), ((9, 0), 90), ((12, 0), 120)] {
            assert_eq!(at(&DEFAULT, Some(120), cc), CodeFor::Native { sm });
        }
        // An A30/Orin-like 8.7 runs sm_86's SASS; a 12.1 card sm_120's.
        assert_eq!(at(&DEFAULT, Some(120), (8, 7)), CodeFor::Native { sm: 86 });
        assert_eq!(
            at(&DEFAULT, Some(120), (12, 1)),
            CodeFor::Native { sm: 120 }
        );
        // The old default (80..90, PTX 90): Blackwell JITs, Turing cannot run at all.
        let old = [80, 86, 89, 90];
        assert_eq!(at(&old, Some(90), (12, 0)), CodeFor::Jit { compute: 90 });
        assert_eq!(at(&old, Some(90), (10, 0)), CodeFor::Jit { compute: 90 });
        assert_eq!(at(&old, Some(90), (7, 5)), CodeFor::None);
        // SASS never crosses a major: sm_90 does not run on 10.0.
        assert_eq!(at(&[90], None, (10, 0)), CodeFor::None);
        // A build without kernels runs nothing.
        assert_eq!(at(&[], None, (9, 0)), CodeFor::None);
    }

    #[test]
    fn lists_parse_as_build_rs_writes_them() {
        assert_eq!(parse_list("75,80,120"), vec![75, 80, 120]);
        assert_eq!(parse_list(""), Vec::<u32>::new());
    }
}
