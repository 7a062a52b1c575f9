"""Build ``mutations.json``: every mutation GitHub's GraphQL schema publishes, and its effect.

    .venv/bin/python -m providers.github.mutations_build [SCHEMA_DIR]    (or: make mutations)

``SCHEMA_DIR`` is the ``@octokit/graphql-schema`` npm package (default
``tests/npm/node_modules/@octokit/graphql-schema``), whose ``schema.graphql`` is
the schema of api.github.com. A test fails when the committed table differs from
what this makes. The table holds a name GitHub publishes; one it does not (a newer
mutation, a typo) is a ``destroy`` wherever the table is read: it fails closed.

The rule, applied to each field of the ``Mutation`` type:

``destroy`` is what loses data or someone's access: after it, something is gone
that the call itself does not hold (content, a relation another person made or
relies on, a right to read or to write), or something pending is undone. By name,
a mutation whose name begins with one of these verbs (followed by a capital letter)
is a destroy:

* ``delete`` (content, settings, refs), ``remove`` (a member, a collaborator, an
  administrator, a label, an assignee, a sub-issue, an identity provider),
  ``clear`` (every label, a project field's value), ``unpublish``;
* ``archive`` (a repository becomes read-only for everyone), ``transfer`` (an
  issue or an organization moves away, with who may see it), ``lock`` (only
  collaborators may comment), ``revoke`` (a role), ``cancel`` (an invitation, a
  sponsorship), ``unlink`` (a project from a repository or a team: the team's
  access goes with it), ``regenerate`` (recovery codes, a token: the old ones stop
  working), ``retire`` (a sponsors tier);
* ``abort`` (a migration in progress), ``dismiss`` (a review's approval, a security
  alert), ``reject`` and ``decline`` (a pending deployment, a suggestion),
  ``disable`` and ``dequeue`` (a pull request's auto-merge, its place in the merge
  queue).

Some names that say nothing of it lose data or access through their arguments,
and are a destroy too (:data:`DESTROY_NAMES`, each with its reason): a ref moved
by force, an allow list or an identity provider that locks people out, a role or
a permission lowered, a payment made.

Everything else is a ``write``, and so are these, deliberately:

* what undoes a state its counterpart sets and loses nothing: ``close`` and
  ``reopen``, ``unarchive``, ``unlock``, ``minimize`` and ``unminimize``, ``pin``
  and ``unpin``, ``resolve`` and ``unresolve``, ``mark`` and ``unmark``,
  ``follow`` and ``unfollow``;
* your own mark taken back (:data:`WRITE_NAMES`): ``removeReaction``,
  ``removeStar``, ``removeUpvote``;
* an update that replaces a value (a title, a body, a list of labels, a setting):
  what it sets is in the call, and GitHub keeps the edit history of bodies;
* a merge, a revert, a commit on a branch (history is kept), and settings that
  weaken a protection (``updateBranchProtectionRule``, ``updateRepositoryRuleset``):
  what they let happen later is decided when it happens.

The file is one JSON object, one mutation a line, sorted by name: ``[name,
effect]``, and ``[name, effect, reason]`` for a name whose effect its verb does
not say.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

DEFAULT_DIR = Path("tests/npm/node_modules/@octokit/graphql-schema")
TARGET = Path(__file__).with_name("mutations.json")

DESTROY_VERBS = (
    "abort",
    "archive",
    "cancel",
    "clear",
    "decline",
    "delete",
    "dequeue",
    "disable",
    "dismiss",
    "lock",
    "regenerate",
    "reject",
    "remove",
    "retire",
    "revoke",
    "transfer",
    "unlink",
    "unpublish",
)
_VERB = re.compile(rf"^({'|'.join(DESTROY_VERBS)})(?=[A-Z]|$)")

# Names no verb makes a destroy that lose data or access through their arguments.
DESTROY_NAMES = {
    "createSponsorship": "it pays: a sponsorship charges the account",
    "createSponsorships": "it pays: each sponsorship charges the account",
    "setEnterpriseIdentityProvider": "members without an identity at the new provider lose access",
    "setOrganizationInteractionLimit": "it takes away others' right to comment, as a lock",
    "setRepositoryInteractionLimit": "it takes away others' right to comment, as a lock",
    "setUserInteractionLimit": "it takes away others' right to comment, as a lock",
    "startRepositoryMigration": "lockSource: true locks the source repository",
    "updateEnterpriseAdministratorRole": "it can demote an administrator or leave them "
    "unaffiliated",
    "updateEnterpriseDefaultRepositoryPermissionSetting": "it can lower every member's base "
    "permission, to none",
    "updateEnterpriseDeployKeySetting": "disabled, every deploy key of the enterprise stops "
    "working",
    "updateEnterpriseOwnerOrganizationRole": "it can leave an owner unaffiliated with an "
    "organization",
    "updateEnterpriseTwoFactorAuthenticationDisallowedMethodsSetting": "members using a "
    "disallowed method lose access",
    "updateEnterpriseTwoFactorAuthenticationRequiredSetting": "turned on, members without "
    "two-factor authentication are removed",
    "updateIpAllowListEnabledSetting": "turned on, every address not listed is locked out",
    "updateIpAllowListEntry": "it can replace the addresses an allowed entry admits",
    "updateIpAllowListForInstalledAppsEnabledSetting": "turned on, apps' addresses not "
    "listed are locked out",
    "updateProjectV2Collaborators": "it can take a collaborator's role away (NONE)",
    "updateRef": "force: true moves a branch to any commit, dropping commits (git push --force)",
    "updateRefs": "it moves refs by force and deletes them",
    "updateTeamsRepository": "it can lower teams' permission on a repository",
}

# Names a verb makes a destroy that are a write: nothing of anyone else's is lost.
WRITE_NAMES = {
    "removeReaction": "your own reaction taken back",
    "removeStar": "your own star taken back",
    "removeUpvote": "your own upvote taken back",
}


def effect_of(name: str) -> tuple[str, str]:
    """The effect of the mutation ``name`` by the rule above, and the reason when its verb
    does not say it ("" when it does)."""
    if name in DESTROY_NAMES:
        return "destroy", DESTROY_NAMES[name]
    if name in WRITE_NAMES:
        return "write", WRITE_NAMES[name]
    return ("destroy" if _VERB.match(name) else "write"), ""


def mutation_names(sdl: str) -> list[str]:
    """The fields of the schema's mutation type (``Mutation`` unless the schema definition
    names another), with its extensions."""
    from graphql import parse
    from graphql.language import (
        ObjectTypeDefinitionNode,
        ObjectTypeExtensionNode,
        OperationType,
        SchemaDefinitionNode,
    )

    document = parse(sdl, no_location=True)
    root = "Mutation"
    for definition in document.definitions:
        if isinstance(definition, SchemaDefinitionNode):
            for operation in definition.operation_types:
                if operation.operation is OperationType.MUTATION:
                    root = operation.type.name.value
    names: set[str] = set()
    for definition in document.definitions:
        if (
            isinstance(definition, ObjectTypeDefinitionNode | ObjectTypeExtensionNode)
            and definition.name.value == root
        ):
            names.update(f.name.value for f in definition.fields or ())
    return sorted(names)


def build(schema_dir: Path = DEFAULT_DIR) -> str:
    """The text of ``mutations.json`` for the ``@octokit/graphql-schema`` package in
    ``schema_dir``."""
    package = json.loads((schema_dir / "package.json").read_text(encoding="utf-8"))
    names = mutation_names((schema_dir / "schema.graphql").read_text(encoding="utf-8"))
    if not names:
        raise ValueError(f"{schema_dir / 'schema.graphql'} has no mutation type")
    head = {
        "generator": "python -m providers.github.mutations_build",
        "schema": f"@octokit/graphql-schema {package['version']}",
        "entry": ["mutation", "effect", "reason (when its verb does not say it)"],
        "unknown": "destroy",
    }
    lines = []
    for name in names:
        effect, reason = effect_of(name)
        entry = [name, effect, reason] if reason else [name, effect]
        lines.append(json.dumps(entry, separators=(",", ":")))
    text = json.dumps(head, separators=(",", ":"))[:-1]
    return text + ',\n"mutations":[\n' + ",\n".join(lines) + "\n]}\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = build(Path(args[0]) if args else DEFAULT_DIR)
    TARGET.write_text(text, encoding="utf-8")
    table = json.loads(text)["mutations"]
    destroy = sum(1 for entry in table if entry[1] == "destroy")
    print(f"wrote {TARGET} ({len(table)} mutations, {destroy} of them destroy)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
