"""Planning and policy: substitution, binding as authored, the policy, the plan."""
