//! How a piece of the user's code reads in a message: as they would write it. Used by every
//! pass's messages; uses nothing of the crate.

use quote::ToTokens;

/// A value as the user would write it (token spacing tidied: `E::A(1)`, not `E :: A (1)`).
pub(crate) fn render(value: &impl ToTokens) -> String {
    tidy(&value.to_token_stream().to_string())
}

/// Removes the spaces `TokenStream`'s `Display` puts around punctuation.
fn tidy(text: &str) -> String {
    // Every replacement below removes a space: a text without one (a key) is tidy already.
    if !text.contains(' ') {
        return text.to_owned();
    }
    let mut s = text.to_owned();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" ::", "::"),
        (" ,", ","),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" (", "("),
        ("& ", "&"),
        (" .", "."),
        (". ", "."),
        ("! ", "!"),
        ("| e |", "|e|"),
        (" ;", ";"),
        (" : ", ": "),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        ("& mut", "&mut"),
    ] {
        s = s.replace(from, to);
    }
    s
}
