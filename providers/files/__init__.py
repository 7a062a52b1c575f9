"""The ``files`` provider: local file operations confined to policy roots, and structured
edits of YAML, Terraform and CODEOWNERS files in place.

This module is only the declaration (operations as data). The implementation is
imported when a step runs: :mod:`providers.files.ops` for the file operations,
:mod:`providers.files.edits` for the edits (each format's editor, and its library, only
when an edit of that format is checked or run).
"""

from __future__ import annotations

from runtime.provider import (
    BoundCall,
    Inspection,
    Operation,
    Option,
    Positional,
    ProviderBase,
    RunContext,
    StepEnvironment,
    StepOutcome,
)
from runtime.provider.operations import BindingProblem

# What `runtime capability new NAME --provider files` writes: inputs and workflow.
SCAFFOLD = """inputs:
  path:
    description: File to write the greeting to (its folder must exist)
    required: true
  greeting:
    description: Text to write
    required: true

workflow:
  # Each step names a provider and the words you would type after
  # `runtime files`; `runtime files --help` lists every operation.
  - provider: files
    args: [write, "${path}", "${greeting}"]

  - provider: files
    args: [read, "${path}"]
"""

_OPS = "providers.files.ops:"


def _edit_options(*own: Option) -> tuple[Option, ...]:
    """An edit's own options, then where it looks: the folder, the files' name or glob,
    and the matches each file that has one must have (ER's flags, and key=value)."""
    return (
        *own,
        Option(
            "dir",
            "folder searched, with its subfolders (under a read and a write root)",
            required=True,
            type="path",
            access="write",
            flags=("--dir",),
        ),
        Option("filename", "the files' name (build.yaml)", flags=("--filename",)),
        Option("include", "a glob the files' names match ('*.tf')", flags=("--include",)),
        Option(
            "expected_per_file",
            "the matches each file with a match must have, or nothing is written",
            type="int",
            range=(1, None),
            flags=("--expected-per-file",),
        ),
    )


EDIT_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        words=("yaml", "replace"),
        summary=(
            "Replace every scalar value FROM with TO in the YAML files under DIR, changing "
            "only those bytes (comments, quoting and layout stay); all files or none"
        ),
        transport="local",
        effect="write",
        options=_edit_options(
            Option("from", "the value replaced (a whole scalar)", required=True, flags=("--from",)),
            Option("to", "the value written in its place", required=True, flags=("--to",)),
        ),
        handler="providers.files.yaml_edit:yaml_replace",
        example="runtime files yaml replace --from v1 --to v2 --dir . --filename build.yaml",
    ),
    Operation(
        words=("yaml", "set"),
        summary=(
            "Set the scalar at PATH (a.b[name=app].c, [0]) to VALUE in the YAML files "
            "under DIR, changing only its bytes; all files or none"
        ),
        transport="local",
        effect="write",
        options=_edit_options(
            Option(
                "path",
                "keys separated by '.', [N] for an item, [KEY=VALUE] for the items of a "
                "list whose KEY is VALUE",
                required=True,
                flags=("--path",),
            ),
            Option("value", "the scalar value written", required=True, flags=("--value",)),
        ),
        handler="providers.files.yaml_edit:yaml_set",
        example=(
            "runtime files yaml set --path 'spec.template.spec.containers[name=app].image' "
            "--value acme/app:2 --dir . --filename deployment.yaml --expected-per-file 1"
        ),
    ),
    Operation(
        words=("terraform", "set-attribute"),
        summary=(
            "Set ATTRIBUTE of each top-level BLOCK (with LABEL) to VALUE, an HCL "
            "expression, in the Terraform files under DIR; all files or none"
        ),
        transport="local",
        effect="write",
        options=_edit_options(
            Option(
                "block", "the block's type (module, resource)", required=True, flags=("--block",)
            ),
            Option(
                "label",
                "the block's labels, joined by '.' (repository; google_storage_bucket.logs)",
                flags=("--label",),
            ),
            Option("attribute", "the attribute set", required=True, flags=("--attribute",)),
            Option(
                "value",
                "an HCL expression, written as it is: '\"main\"' is a string",
                required=True,
                flags=("--value",),
            ),
        ),
        handler="providers.files.hcl_edit:set_attribute",
        example=(
            "runtime files terraform set-attribute --block module --label repository "
            "--attribute branch --value '\"main\"' --dir . --include '*.tf'"
        ),
    ),
    Operation(
        words=("terraform", "update-provider"),
        summary=(
            "Set the version constraint of the provider SOURCE in required_providers "
            "(and terraform's required_version) in the Terraform files under DIR"
        ),
        transport="local",
        effect="write",
        options=_edit_options(
            Option(
                "source",
                "the provider's source (hashicorp/google)",
                required=True,
                flags=("--source",),
            ),
            Option(
                "version", "its version constraint ('~> 5.0')", required=True, flags=("--version",)
            ),
            Option(
                "terraform_version",
                "terraform's required_version constraint ('>= 1.5')",
                flags=("--terraform-version",),
            ),
        ),
        handler="providers.files.hcl_edit:update_provider",
        example=(
            "runtime files terraform update-provider --source hashicorp/google "
            "--version '~> 5.0' --dir . --include '*.tf'"
        ),
    ),
    Operation(
        words=("codeowners", "add-owner"),
        summary=(
            "Add OWNER to the CODEOWNERS rule that decides PATTERN (the last line with it: "
            "the last match wins), or a first rule for it; all files or none"
        ),
        transport="local",
        effect="write",
        options=_edit_options(
            Option(
                "pattern",
                "the rule's pattern, as written ('*', /docs/)",
                required=True,
                flags=("--pattern",),
            ),
            Option(
                "owner", "@user, @org/team or an email address", required=True, flags=("--owner",)
            ),
        ),
        handler="providers.files.codeowners:add_owner",
        example="runtime files codeowners add-owner --pattern '*' --owner @acme/web --dir . --filename CODEOWNERS",
    ),
)
EDITS = frozenset(op.name for op in EDIT_OPERATIONS)

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        words=("read",),
        summary=(
            "Print a UTF-8 text file's content (binary files and files over 16 MiB are refused)"
        ),
        transport="local",
        effect="read",
        positionals=(Positional("PATH", help="file to read", type="path", access="read"),),
        handler=_OPS + "read_file",
        example="runtime files read ./notes.txt",
    ),
    Operation(
        words=("write",),
        summary=(
            "Write CONTENT to PATH as a text file ending with a newline (atomic replace; an "
            "existing file keeps its read/write bits, never execute bits; the parent folder "
            "must exist)"
        ),
        transport="local",
        effect="write",
        positionals=(
            Positional("PATH", help="file to write", type="path", access="write"),
            Positional("CONTENT", help="text to write; a final newline is added unless it has one"),
        ),
        handler=_OPS + "write_file",
        example="runtime files write ./notes.txt hello",
    ),
    Operation(
        words=("append",),
        summary=(
            "Append CONTENT to PATH, ending with a newline as write does (created if "
            "missing; atomic too; keeps read/write bits, never execute bits)"
        ),
        transport="local",
        effect="write",
        positionals=(
            Positional("PATH", help="file to append to", type="path", access="write"),
            Positional(
                "CONTENT", help="text to append; a final newline is added unless it has one"
            ),
        ),
        handler=_OPS + "append_file",
        example="runtime files append ./log.txt 'deployed v1'",
    ),
    Operation(
        words=("list",),
        summary="List a folder's entries with type and size, sorted by name",
        transport="local",
        effect="read",
        positionals=(Positional("DIR", help="folder to list", type="path", access="read"),),
        handler=_OPS + "list_folder",
        example="runtime files list .",
    ),
    Operation(
        words=("mkdir",),
        summary="Create one folder (its parent must exist; an existing folder is fine)",
        transport="local",
        effect="write",
        positionals=(Positional("DIR", help="folder to create", type="path", access="write"),),
        handler=_OPS + "make_folder",
        example="runtime files mkdir ./docs",
    ),
    Operation(
        words=("delete",),
        summary=(
            "Delete a file (effect destroy: refused unless a policy's allowed_destructive lists it)"
        ),
        transport="local",
        effect="destroy",
        positionals=(Positional("PATH", help="file to delete", type="path", access="write"),),
        handler=_OPS + "delete_file",
        example="runtime files delete ./old.txt",
    ),
    *EDIT_OPERATIONS,
)


class FilesProvider(ProviderBase):
    name = "files"
    summary = (
        "Local files and structured edits (YAML, Terraform, CODEOWNERS), confined to the "
        "policy's read and write roots; "
        "never writes Runtime Home, the policy file or .git"
    )
    operations = OPERATIONS
    scaffold = SCAFFOLD
    scaffold_network = "none"

    def execute(self, operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
        if operation.name in EDITS:
            from providers.files.edits import execute as edit

            return edit(operation, call, env)
        from providers.files.ops import execute

        return execute(operation, call, env)

    def inspect(self, operation: Operation, call: BoundCall, run: RunContext) -> Inspection:
        if operation.name in EDITS:
            from providers.files.edits import inspect as preview

            return preview(operation, call, run)
        from providers.files.ops import inspect

        return inspect(operation, call, run)

    def check(self, operation: Operation, call: BoundCall) -> list[BindingProblem]:
        if operation.name in EDITS:
            from providers.files.edits import check as checked

            return checked(operation, call)
        from providers.files.ops import check

        return check(operation, call)


PROVIDER = FilesProvider()
