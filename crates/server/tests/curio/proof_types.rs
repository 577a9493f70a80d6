//! The seal proof types Curio sends besides interactive PoRep (issue 53). With
//! `UseSyntheticPoRep` on, a sector's C1 output is `StackedDrg*V1_1_Feat_SyntheticPoRep`
//! (`registered_proof` 10..=14 on the wire): it is proved, and `verify_seal` accepts the proof
//! for that type. NI-PoRep (15..=19) needs its partition proofs aggregated with SnarkPack,
//! which zkforge does not do: it is refused at submit, by name, and nothing is queued.

use filecoin_proofs_api::RegisteredSealProof;
use tonic::Code;
use zkforge_engine::StageEvent;
use zkforge_filecoin::registered_proof::{
    non_interactive_seal_proof_for, seal_proof_for, synthetic_seal_proof_for,
};
use zkforge_fixtures::Manifest;
use zkforge_server::pb::{self, proving_engine_client::ProvingEngineClient};

use crate::daemon::{Setup, TestDaemon};
use crate::requests::{Sector, MINER};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synthetic_porep_from_curio_is_proved_and_verify_seal_accepts_it_as_synthetic() {
    let synthetic = synthetic_seal_proof_for(2048).unwrap();
    let sector = Sector::porep_only(synthetic, 53);
    let req = sector.porep();
    // Curio's request, field for field: the sector's proof type as Go's abi number
    // (RegisteredSealProof_StackedDrg2KiBV1_1_Feat_SyntheticPoRep) and its task's request id.
    assert_eq!(req.registered_proof, 10);
    assert_eq!(
        req.request_id,
        format!("porep-{MINER}-{}", sector.m.sector_id)
    );
    // The daemon holds only the parameter sets of the current proof types: the synthetic
    // proof is made with the interactive PoRep's set, the file filecoin-proofs names for both.
    let d = TestDaemon::start(Setup::default()).await;
    let answer = d.curio().prove(req.clone()).await.expect("one try");
    assert_eq!(answer.proof.len(), 192, "one partition at 2 KiB");
    assert!(
        sector.verifies(&req, &answer.proof),
        "verify_seal for StackedDrg2KiBV1_1_Feat_SyntheticPoRep accepts the proof"
    );
    // The control: the same proof is not one of the interactive type (its porep_id, hence its
    // replica id, and its challenges differ), so the acceptance above is of a synthetic proof.
    let as_interactive = Manifest {
        registered_seal_proof: seal_proof_for(2048).unwrap(),
        ..sector.m.clone()
    };
    assert!(!as_interactive.verify_porep(&answer.proof).unwrap_or(false));
    // Curio's retry of the completed task gets the same proof from the same job.
    let retry = d.curio().prove(req.clone()).await.expect("the retry");
    assert_eq!(
        (retry.job_id, retry.proof),
        (answer.job_id, answer.proof.clone())
    );
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ni_porep_is_refused_at_submit_naming_the_type_and_the_missing_aggregation() {
    let ni = non_interactive_seal_proof_for(2048).unwrap();
    let sector = Sector::porep_only(ni, 54);
    assert_eq!(
        sector.m.registered_seal_proof,
        RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep
    );
    let d = TestDaemon::start(Setup::default()).await;
    let mut c = ProvingEngineClient::connect(format!("http://{}", d.tcp()))
        .await
        .unwrap();
    let refused = |st: tonic::Status| {
        assert_eq!(st.code(), Code::InvalidArgument, "{}", st.message());
        for words in [
            "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep",
            "aggregation is not supported",
        ] {
            assert!(st.message().contains(words), "{}", st.message());
        }
    };
    // As Curio sends it (the wire number, 15, is refused before the C1 is parsed); with
    // registered_proof unset, the C1's own type is refused; and through the unary Prove.
    let req = sector.porep();
    assert_eq!(req.registered_proof, 15);
    refused(c.submit_proof(req.clone()).await.unwrap_err());
    let unset = pb::SubmitProofRequest {
        registered_proof: 0,
        ..req.clone()
    };
    refused(c.submit_proof(unset).await.unwrap_err());
    let prove = pb::ProveRequest {
        submit: Some(req.clone()),
    };
    refused(c.prove(prove).await.unwrap_err());
    // The NI number on an interactive C1 is refused as well (by the number), not proved as
    // the C1's type.
    let interactive = Sector::new(55);
    let mislabelled = pb::SubmitProofRequest {
        registered_proof: 15,
        ..interactive.porep()
    };
    refused(c.submit_proof(mislabelled).await.unwrap_err());
    // Refused before it was a job: nothing queued, started or failed.
    let s = d.engine.status();
    assert_eq!((s.completed, s.failed), (0, 0));
    let submitted = d
        .engine
        .timeline()
        .iter()
        .filter(|e| e.event == StageEvent::JobSubmit)
        .count();
    assert_eq!(submitted, 0, "no job was submitted");
    d.stop().await;
}
