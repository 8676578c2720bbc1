"""Groups of features explained together (``groups=``), checked against the features before any data is read.

Each group is one player whose similarity is the conjunction of its members' (a subject is similar
on the group when it is similar on every member); features no group names are players of their own.
With ``group_values="owen"`` each feature also gets its Owen value under that union structure
(docs/design.md §5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cohortsql._typing import GROUP_VALUES, GroupValues
from cohortsql.errors import CohortError, check_choice


@dataclass(frozen=True)
class FeatureGroups:
    """The players of a grouped run: their names and members (indices into the features), in the order
    of each player's first feature."""

    names: tuple[str, ...]
    members: tuple[tuple[int, ...], ...]
    values: GroupValues
    """``players`` (each group's value) or ``owen`` (also each feature's Owen value)."""

    @property
    def masks(self) -> list[int]:
        """Each player's features as the integer of their bits."""
        return [sum(1 << feature for feature in members) for members in self.members]

    @property
    def member_order(self) -> list[int]:
        """Every feature once, player after player (the order of `members_by_name`)."""
        return [index for members in self.members for index in members]

    def members_by_name(self, features: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Every player's name and its features' names."""
        return {name: tuple(features[index] for index in members) for name, members in zip(self.names, self.members)}

    def described(self, features: Sequence[str]) -> dict[str, list[str]]:
        """Every player of more than one feature, or named otherwise than its feature: name -> members."""
        return {
            name: [features[index] for index in members]
            for name, members in zip(self.names, self.members)
            if [features[index] for index in members] != [name]
        }


def plan_groups(
    groups: Mapping[str, Sequence[str]] | None, features: Sequence[str], values: GroupValues
) -> FeatureGroups | None:
    """The players for ``groups=`` (group name -> its features) over `features`, or None without groups.

    Every member must be one of the features and in one group only; a group's name may not be the name
    of a feature outside it (the results would name two players alike)."""
    check_choice("group_values", values, GROUP_VALUES)
    if not groups:
        if values != "players":
            raise CohortError(f"group_values={values!r} needs groups= (group name -> its features)")
        return None
    if not isinstance(groups, Mapping):
        raise CohortError(f"groups must map each group's name to its features, got {groups!r}")
    group_of: dict[str, str] = {}
    for name, members in groups.items():
        if not isinstance(name, str) or not name:
            raise CohortError(f"a group's name must be non-empty text, got {name!r}")
        if isinstance(members, str) or not isinstance(members, Sequence) or not members:
            raise CohortError(f"group {name!r} must list its features (a list of names), got {members!r}")
        for member in members:
            if member not in features:
                raise CohortError(
                    f"group {name!r} names {member!r}, which is not a feature; the features are {list(features)}"
                )
            if group_of.get(member) == name:
                raise CohortError(f"group {name!r} names {member!r} twice")
            if member in group_of:
                raise CohortError(f"feature {member!r} is in two groups, {group_of[member]!r} and {name!r}")
            group_of[member] = name
        clash = name in features and group_of.get(name) != name
        if clash:
            raise CohortError(f"group {name!r} has the name of a feature outside it; name the group otherwise")
    indices: dict[str, list[int]] = {}  # each player's features, players in the order of their first
    for index, feature in enumerate(features):
        indices.setdefault(group_of.get(feature, feature), []).append(index)
    return FeatureGroups(tuple(indices), tuple(tuple(found) for found in indices.values()), values)
