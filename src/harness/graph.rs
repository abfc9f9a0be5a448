//! A plan as a graph: which tasks must be done before a task starts. A plan where no task
//! declares `depends_on` keeps its old meaning (each task after the one before it); once any
//! task declares it, even as `[]`, every task depends only on what it declares.

use super::plan::{Plan, Task};
use std::collections::BTreeSet;

/// What is wrong with a plan's dependencies: the task it is about, the problem, the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphProblem {
    pub task: String,
    pub problem: String,
    pub fix: String,
}

impl Plan {
    /// Whether any task declares `depends_on`, which makes the plan a graph.
    pub fn is_graph(&self) -> bool {
        self.tasks.iter().any(|t| t.depends_on.is_some())
    }

    /// The tasks `task` waits for: what it declares in a graph, else the task before it.
    pub fn dependencies(&self, task: &str) -> Vec<&str> {
        if self.is_graph() {
            return self
                .tasks
                .iter()
                .find(|t| t.id == task)
                .and_then(|t| t.depends_on.as_deref())
                .map(|d| d.iter().map(String::as_str).collect())
                .unwrap_or_default();
        }
        let at = self.tasks.iter().position(|t| t.id == task);
        at.and_then(|i| i.checked_sub(1))
            .map(|i| vec![self.tasks[i].id.as_str()])
            .unwrap_or_default()
    }

    /// An unknown id, a task that depends on itself, or a cycle: each said once, about the
    /// task where it shows.
    pub fn graph_problems(&self) -> Vec<GraphProblem> {
        let mut out = Vec::new();
        let ids: BTreeSet<&str> = self.tasks.iter().map(|t| t.id.as_str()).collect();
        for task in &self.tasks {
            for dep in task.depends_on.iter().flatten() {
                if dep == &task.id {
                    out.push(GraphProblem {
                        task: task.id.clone(),
                        problem: format!("{} depends on itself", task.id),
                        fix: format!("take {} out of its own depends_on", task.id),
                    });
                } else if !ids.contains(dep.as_str()) {
                    out.push(GraphProblem {
                        task: task.id.clone(),
                        problem: format!("{} depends on {dep}, which is not in the plan", task.id),
                        fix: format!(
                            "name tasks of this plan ({})",
                            ids.iter().copied().collect::<Vec<_>>().join(", ")
                        ),
                    });
                }
            }
        }
        if let Some(cycle) = self.cycle() {
            // The circle reads in working order (each task before the next), so the second
            // task is the one whose depends_on names the first.
            let (first, next) = (cycle[0].clone(), cycle[1].clone());
            out.push(GraphProblem {
                task: next.clone(),
                problem: format!("the tasks wait for each other in a circle: {}", cycle.join(" → ")),
                fix: format!(
                    "take one task out of the depends_on of the task after it (for example {first} from {next}'s depends_on)"
                ),
            });
        }
        out
    }

    /// A cycle among known tasks, as the ids around it with the first repeated at the end.
    fn cycle(&self) -> Option<Vec<String>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done,
        }
        fn visit(
            plan: &Plan,
            i: usize,
            marks: &mut [Mark],
            path: &mut Vec<usize>,
        ) -> Option<Vec<String>> {
            marks[i] = Mark::Open;
            path.push(i);
            for dep in plan.dependencies(&plan.tasks[i].id) {
                let Some(j) = plan.tasks.iter().position(|t| t.id == dep) else { continue };
                if j == i {
                    continue;
                }
                match marks[j] {
                    Mark::Open => {
                        let from = path.iter().position(|p| *p == j).unwrap_or(0);
                        let mut ids: Vec<String> =
                            path[from..].iter().map(|p| plan.tasks[*p].id.clone()).collect();
                        ids.reverse();
                        ids.push(ids[0].clone());
                        return Some(ids);
                    }
                    Mark::New => {
                        if let Some(found) = visit(plan, j, marks, path) {
                            return Some(found);
                        }
                    }
                    Mark::Done => {}
                }
            }
            path.pop();
            marks[i] = Mark::Done;
            None
        }
        let mut marks = vec![Mark::New; self.tasks.len()];
        for i in 0..self.tasks.len() {
            if marks[i] == Mark::New
                && let Some(cycle) = visit(self, i, &mut marks, &mut Vec::new())
            {
                return Some(cycle);
            }
        }
        None
    }

    /// The tasks in the order one lane works them: each after everything it depends on, and
    /// otherwise in the plan's order. Tasks caught in a cycle (which `check` refuses) come
    /// last, in plan order, so nothing is lost.
    pub fn in_order(&self) -> Vec<&Task> {
        let mut done: BTreeSet<&str> = BTreeSet::new();
        let mut out: Vec<&Task> = Vec::new();
        while out.len() < self.tasks.len() {
            let next = self.tasks.iter().find(|t| {
                !done.contains(t.id.as_str())
                    && self
                        .dependencies(&t.id)
                        .iter()
                        .all(|d| done.contains(d) || !self.tasks.iter().any(|x| x.id == *d))
            });
            let Some(next) =
                next.or_else(|| self.tasks.iter().find(|t| !done.contains(t.id.as_str())))
            else {
                break;
            };
            done.insert(&next.id);
            out.push(next);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(deps: &[(&str, Option<&[&str]>)]) -> Plan {
        Plan {
            source: "p".into(),
            feature: "f".into(),
            overview: None,
            seed: None,
            tasks: deps
                .iter()
                .map(|(id, d)| Task {
                    id: (*id).into(),
                    title: "t".into(),
                    description: String::new(),
                    criteria: vec!["c".into()],
                    tests: Vec::new(),
                    depends_on: d.map(|d| d.iter().map(|s| (*s).to_owned()).collect()),
                    best_of: None,
                })
                .collect(),
        }
    }

    #[test]
    fn a_plan_without_depends_on_is_a_chain_and_one_with_it_a_graph() {
        let chain = plan(&[("T-001", None), ("T-002", None), ("T-003", None)]);
        assert!(!chain.is_graph());
        assert_eq!(chain.dependencies("T-003"), ["T-002"]);
        assert!(chain.dependencies("T-001").is_empty());
        let graph = plan(&[("T-001", Some(&[])), ("T-002", None), ("T-003", Some(&["T-001"]))]);
        assert!(graph.is_graph());
        assert!(graph.dependencies("T-002").is_empty(), "a task without the field needs nothing");
        assert_eq!(graph.dependencies("T-003"), ["T-001"]);
        assert!(graph.graph_problems().is_empty());
    }

    #[test]
    fn the_order_puts_each_task_after_what_it_waits_for() {
        let p = plan(&[("T-001", Some(&["T-003"])), ("T-002", Some(&[])), ("T-003", Some(&[]))]);
        let order: Vec<&str> = p.in_order().iter().map(|t| t.id.as_str()).collect();
        assert_eq!(order, ["T-002", "T-003", "T-001"]);
    }

    #[test]
    fn unknown_ids_self_dependencies_and_cycles_are_named() {
        let p = plan(&[
            ("T-001", Some(&["T-009"])),
            ("T-002", Some(&["T-002"])),
            ("T-003", Some(&["T-004"])),
            ("T-004", Some(&["T-003"])),
        ]);
        let problems: Vec<String> = p.graph_problems().into_iter().map(|g| g.problem).collect();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("T-001 depends on T-009, which is not in the plan"));
        assert!(problems[1].contains("T-002 depends on itself"));
        assert!(
            problems[2].contains("T-003 → T-004 → T-003")
                || problems[2].contains("T-004 → T-003 → T-004"),
            "{problems:?}"
        );
        assert_eq!(p.in_order().len(), 4, "a cycle loses no task");
    }
}
