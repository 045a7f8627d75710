use reattempt::recover;

#[recover]
struct Fallback {
    value: u32,
}

fn main() {
    let fallback = Fallback { value: 1 };
    let _ = fallback.value;
}
