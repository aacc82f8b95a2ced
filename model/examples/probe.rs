use locklab_model::model::LockModel;
use locklab_model::scenario::Scenario;
use locklab_model::search::{search, SearchOptions};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sc = Scenario::load(&args[1]).unwrap();
    let m = LockModel::new(&sc);
    let sym = args.get(2).map(|s| s != "nosym").unwrap_or(true);
    let r = search(
        &m,
        &SearchOptions {
            symmetry: sym,
            threads: 1,
            max_depth: None,
        },
        |p| eprintln!("{p:?}"),
    );
    println!(
        "states {} unique {} depth {} {:.2}s purchased {}",
        r.states, r.unique_states, r.depth, r.seconds, r.purchased
    );
    for (p, c) in &r.counterexamples {
        match c {
            None => println!("{p}: holds"),
            Some(c) => {
                println!("{p}: violated in {} steps", c.len());
                for a in c {
                    println!("   {a}");
                }
            }
        }
    }
}
