//! Helpers shared by the providers' unit tests.

use crate::{Effective, PermissionMode, RequestedMode};

/// Checks a provider's mapping table: one `(mode, expected settings, exact)` row per
/// [`PermissionMode`]. For each row, the report `effective` gives for the mode (chosen in code,
/// so recognised) must pass `check_settings` (called with the mode, the applied settings and the
/// row's expectation) and be `exact` as the row says, with notes exactly when it is not.
pub(crate) fn assert_mapping_table<S, E>(
    table: &[(PermissionMode, E, bool)],
    effective: impl Fn(&RequestedMode) -> Effective<S>,
    mut check_settings: impl FnMut(PermissionMode, &S, &E),
) {
    assert_eq!(table.len(), PermissionMode::ALL.len());
    for (mode, expected, exact) in table {
        let eff = effective(&RequestedMode::from(*mode));
        check_settings(*mode, &eff.settings, expected);
        assert_eq!(eff.exact, *exact, "{mode}");
        assert_eq!(eff.notes.is_empty(), *exact, "{mode}");
    }
}
