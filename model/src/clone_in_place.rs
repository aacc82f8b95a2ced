//! `clone_in_place!`: a `Clone` whose `clone_from` keeps what it overwrites.
//!
//! The search builds every successor in one state per worker by `clone_from` of the
//! state being expanded ([`crate::model::LockModel::next_state_into`]), and most
//! successors are states seen before, dropped at once. A derived `Clone` has the default
//! `clone_from`, a fresh `clone` that allocates every vector again; the parts of a state
//! write theirs with this macro instead. Each field is named as `copy` (a `Copy` value,
//! copied) or `keep` (cloned from in place: a vector keeps its buffer, a part keeps its
//! own vectors), and both methods destructure the type without `..`, so a field added to
//! it and not to the list does not compile.

/// `clone_in_place!(Type { copy: [a, b], keep: [c, d] })` writes `Clone` for `Type`.
macro_rules! clone_in_place {
    ($t:ident { copy: [$($c:ident),* $(,)?], keep: [$($k:ident),* $(,)?] $(,)? }) => {
        impl Clone for $t {
            fn clone(&self) -> Self {
                let $t { $($c,)* $($k,)* } = self;
                $t {
                    $($c: *$c,)*
                    $($k: $k.clone(),)*
                }
            }

            fn clone_from(&mut self, source: &Self) {
                let $t { $($c,)* $($k,)* } = source;
                $(self.$c = *$c;)*
                $(self.$k.clone_from($k);)*
            }
        }
    };
}

pub(crate) use clone_in_place;

#[cfg(test)]
mod tests {
    use crate::model::{levels, LockModel};
    use crate::scenario::Scenario;

    /// A state cloned from in place into another of any shape (other clients' phases,
    /// requests and strays, other entries, another split) is the state, as a fresh clone
    /// is.
    #[test]
    fn cloning_from_in_place_gives_the_state() {
        let mut pairs = 0;
        for name in [
            "set-px-del-late-release.toml",
            "lua-release-split-brain-wait-both-sides.toml",
            "redlock-restart.toml",
        ] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../scenarios")
                .join(name);
            let model = LockModel::new(&Scenario::load(&path).unwrap());
            let states: Vec<_> = levels(&model, 9)
                .into_iter()
                .flatten()
                .step_by(97)
                .collect();
            for (i, s) in states.iter().enumerate() {
                let mut into = states[(i * 31 + 7) % states.len()].clone();
                into.clone_from(s);
                assert_eq!(&into, s);
                assert_eq!(&s.clone(), s);
                pairs += 1;
            }
        }
        assert!(pairs > 300, "{pairs} pairs");
    }
}
