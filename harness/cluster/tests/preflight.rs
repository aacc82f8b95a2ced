//! The environment errors a CLI turns into exit status 2. One test only: it
//! changes this test process's environment.

use locklab_cluster::{preflight, ClusterError};

#[test]
fn preflight_names_what_is_missing() {
    let saved_host = std::env::var_os("DOCKER_HOST");
    let saved_image = std::env::var_os("LOCKLAB_REDIS_IMAGE");

    // no engine
    std::env::set_var("DOCKER_HOST", "unix:///nonexistent/locklab/docker.sock");
    let err = preflight().unwrap_err();
    assert!(matches!(err, ClusterError::NoDocker(_)), "{err}");
    assert!(err.is_environment());
    assert!(err.to_string().starts_with("no Docker engine: "), "{err}");
    match &saved_host {
        Some(h) => std::env::set_var("DOCKER_HOST", h),
        None => std::env::remove_var("DOCKER_HOST"),
    }

    // bad image name
    std::env::set_var("LOCKLAB_REDIS_IMAGE", "redis@sha256:0123");
    let err = preflight().unwrap_err();
    assert!(matches!(err, ClusterError::InvalidImage { .. }), "{err}");
    assert!(err.is_environment());

    // image not built
    std::env::set_var("LOCKLAB_REDIS_IMAGE", "locklab/no-such-redis:never-built");
    let err = preflight().unwrap_err();
    assert!(
        matches!(err, ClusterError::ImageMissing { .. }),
        "expected ImageMissing (is Docker running?): {err}"
    );
    assert!(err.is_environment());
    let msg = err.to_string();
    assert!(msg.contains("locklab/no-such-redis:never-built"), "{msg}");
    assert!(msg.contains("bash harness/redis-image/build.sh"), "{msg}");

    // the real thing
    match &saved_image {
        Some(i) => std::env::set_var("LOCKLAB_REDIS_IMAGE", i),
        None => std::env::remove_var("LOCKLAB_REDIS_IMAGE"),
    }
    let ok = preflight().unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{ok:?}");
    assert!(!ok.api_version.is_empty());
}
