use calc::{add, div, sub};

#[test]
fn adds_negatives() {
    assert_eq!(add(-2, -3), -5);
}

#[test]
fn subtracts_below_zero() {
    assert_eq!(sub(2, 5), -3);
}

#[test]
fn divides() {
    assert_eq!(div(7, 2), Some(3));
}

#[test]
fn refuses_division_by_zero() {
    assert_eq!(div(1, 0), None);
}
