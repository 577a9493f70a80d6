//! Generates the cuzk.v1 gRPC code with a vendored protoc: no system protoc needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    tonic_build::configure()
        // prost behind a scan that refuses impossible counts before decoding (src/codec.rs).
        .codec_path("crate::codec::ScannedCodec")
        .file_descriptor_set_path(out.join("cuzk_v1_descriptor.bin"))
        .compile_protos(&["proto/cuzk/v1/proving.proto"], &["proto"])?;
    println!("cargo:rerun-if-changed=proto/cuzk/v1/proving.proto");
    Ok(())
}
