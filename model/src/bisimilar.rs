//! The check that an exact canonical form of a state ([`crate::forget`]'s forgotten
//! form, [`crate::relative_time`]'s rebased form) changes no behaviour: a state and its
//! form are bisimilar, one step deep. Shared by those modules' tests.

use stateright::Model;

use crate::model::{Action, LockModel};
use crate::scenario::Property;
use crate::search::Coverage;
use crate::state::State;

/// `s` and `canon(s)` offer the same steps, satisfy the same properties, sit alike
/// inside or outside the boundary, record the same coverage, and each step takes them
/// to states whose canonical forms are equal. `form` names the form in messages.
pub(crate) fn one_step(model: &LockModel, s: &State, canon: impl Fn(&State) -> State, form: &str) {
    let f = canon(s);
    let name = &model.scenario.name;
    let offered = |t: &State| {
        let mut v = Vec::new();
        model.actions(t, &mut v);
        v
    };
    let actions: Vec<Action> = offered(s);
    assert_eq!(actions, offered(&f), "{name}: steps offered\n{s:?}");
    for p in Property::ALL {
        assert_eq!(model.holds(p, s), model.holds(p, &f), "{name}: {p}\n{s:?}");
    }
    assert_eq!(LockModel::purchased(s), LockModel::purchased(&f));
    assert_eq!(model.within_boundary(s), model.within_boundary(&f));
    for a in actions {
        let (mut x, mut y) = (Coverage::default(), Coverage::default());
        x.record(model, s, a);
        y.record(model, &f, a);
        assert_eq!(x, y, "{name}: coverage of {a}");
        let after = |t: &State| model.next_state(t, a).map(|n| canon(&n));
        assert_eq!(
            after(s),
            after(&f),
            "{name}: {a} from\n{s:?}\nand from its {form} form\n{f:?}"
        );
    }
}
