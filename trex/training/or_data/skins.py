"""Industry skins: the words a problem is told in, kept apart from its structure.

A skin maps abstract roles (the things a family talks about: sources, products, workers, ...) to
nouns of one industry.  Every family uses every skin, so the skin never gives the family away.
Entity labels are letters (``Plant C``), never digits, so names add no numbers to the text.
"""
from __future__ import annotations

import string
from dataclasses import dataclass

import numpy as np

ROLES = ("product", "resource", "source", "sink", "commodity", "facility", "customer", "worker", "task",
         "project", "budget", "ingredient", "nutrient", "service", "zone", "period", "shift", "node",
         "asset", "item", "container", "raw", "attribute", "blend", "organization")

# role -> "singular/plural"; a skin must define every role in ROLES (checked at import below).
_SKIN_TABLE: dict[str, dict[str, str]] = {
    "manufacturing": {
        "organization": "a furniture manufacturer/", "product": "product line/product lines",
        "resource": "machine-hour pool/machine-hour pools", "source": "plant/plants",
        "sink": "distribution center/distribution centers", "commodity": "pallet of parts/pallets of parts",
        "facility": "candidate factory site/candidate factory sites", "customer": "assembly client/assembly clients",
        "worker": "machinist/machinists", "task": "work order/work orders", "project": "upgrade project/upgrade projects",
        "budget": "capital budget line/capital budget lines", "ingredient": "alloy input/alloy inputs",
        "nutrient": "strength property/strength properties", "service": "maintenance crew/maintenance crews",
        "zone": "production cell/production cells", "period": "week/weeks", "shift": "shift pattern/shift patterns",
        "node": "depot/depots", "asset": "equipment fund/equipment funds", "item": "component/components",
        "container": "crate/crates", "raw": "scrap grade/scrap grades", "attribute": "property/properties",
        "blend": "steel batch/steel batches",
    },
    "food": {
        "organization": "a regional food cooperative/", "product": "packaged food/packaged foods",
        "resource": "kitchen resource/kitchen resources", "source": "farm/farms", "sink": "market/markets",
        "commodity": "crate of produce/crates of produce", "facility": "candidate packing house/candidate packing houses",
        "customer": "grocery store/grocery stores", "worker": "cook/cooks", "task": "catering order/catering orders",
        "project": "orchard project/orchard projects", "budget": "grant budget/grant budgets",
        "ingredient": "food/foods", "nutrient": "nutrient/nutrients", "service": "delivery route/delivery routes",
        "zone": "village/villages", "period": "month/months", "shift": "kitchen shift/kitchen shifts",
        "node": "collection point/collection points", "asset": "agricultural fund/agricultural funds",
        "item": "produce box/produce boxes", "container": "truck/trucks", "raw": "grain/grains",
        "attribute": "content measure/content measures", "blend": "feed mix/feed mixes",
    },
    "healthcare": {
        "organization": "a hospital network/", "product": "treatment kit/treatment kits",
        "resource": "clinical resource/clinical resources", "source": "blood bank/blood banks",
        "sink": "hospital/hospitals", "commodity": "unit of blood/units of blood",
        "facility": "candidate clinic site/candidate clinic sites", "customer": "neighborhood/neighborhoods",
        "worker": "nurse/nurses", "task": "ward/wards", "project": "equipment purchase/equipment purchases",
        "budget": "funding source/funding sources", "ingredient": "meal component/meal components",
        "nutrient": "dietary requirement/dietary requirements", "service": "mobile clinic/mobile clinics",
        "zone": "district/districts", "period": "week/weeks", "shift": "nursing shift/nursing shifts",
        "node": "medical depot/medical depots", "asset": "endowment fund/endowment funds",
        "item": "supply package/supply packages", "container": "ambulance/ambulances", "raw": "base solution/base solutions",
        "attribute": "concentration/concentrations", "blend": "IV solution/IV solutions",
    },
    "energy": {
        "organization": "a power utility/", "product": "fuel product/fuel products",
        "resource": "refinery unit/refinery units", "source": "power station/power stations",
        "sink": "city grid/city grids", "commodity": "megawatt-hour/megawatt-hours",
        "facility": "candidate substation site/candidate substation sites", "customer": "industrial park/industrial parks",
        "worker": "technician/technicians", "task": "inspection job/inspection jobs",
        "project": "solar project/solar projects", "budget": "investment budget/investment budgets",
        "ingredient": "crude stream/crude streams", "nutrient": "fuel specification/fuel specifications",
        "service": "repair team/repair teams", "zone": "grid sector/grid sectors", "period": "quarter/quarters",
        "shift": "control-room shift/control-room shifts", "node": "substation/substations",
        "asset": "energy fund/energy funds", "item": "battery module/battery modules", "container": "shipping container/shipping containers",
        "raw": "crude grade/crude grades", "attribute": "quality index/quality indices", "blend": "diesel blend/diesel blends",
    },
    "logistics": {
        "organization": "a retail logistics company/", "product": "private-label item/private-label items",
        "resource": "warehouse resource/warehouse resources", "source": "warehouse/warehouses", "sink": "store/stores",
        "commodity": "pallet/pallets", "facility": "candidate hub site/candidate hub sites", "customer": "retail outlet/retail outlets",
        "worker": "driver/drivers", "task": "delivery route/delivery routes", "project": "automation project/automation projects",
        "budget": "budget category/budget categories", "ingredient": "packaging material/packaging materials",
        "nutrient": "packaging standard/packaging standards", "service": "courier partner/courier partners",
        "zone": "postal area/postal areas", "period": "month/months", "shift": "dock shift/dock shifts",
        "node": "cross-dock/cross-docks", "asset": "logistics fund/logistics funds", "item": "parcel/parcels",
        "container": "van/vans", "raw": "recycled pulp grade/recycled pulp grades", "attribute": "fiber measure/fiber measures",
        "blend": "cardboard batch/cardboard batches",
    },
}


@dataclass(frozen=True)
class Skin:
    name: str
    table: dict

    def noun(self, role: str, plural: bool = False) -> str:
        singular, _, many = self.table[role].partition("/")
        return many if plural else singular

    def names(self, role: str, n: int) -> list[str]:
        base = self.noun(role).split(" ")[-1] if role in ("project", "asset") else self.noun(role)
        return [f"{base[0].upper() + base[1:]} {label}" for label in letter_labels(n)]

    @property
    def organization(self) -> str:
        return self.noun("organization")


def letter_labels(n: int) -> list[str]:
    letters = string.ascii_uppercase
    out = []
    for i in range(n):
        out.append(letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26])
    return out


SKINS: dict[str, Skin] = {name: Skin(name, table) for name, table in _SKIN_TABLE.items()}

for _name, _skin in SKINS.items():
    _missing = set(ROLES) - set(_skin.table)
    if _missing:
        raise RuntimeError(f"skin {_name!r} lacks roles {sorted(_missing)}")


def pick_skin(rng: np.random.Generator) -> Skin:
    names = sorted(SKINS)
    return SKINS[names[int(rng.integers(len(names)))]]


# Phrase variants, chosen at random when rendering (surface variety, same meaning).
PHRASES = {
    "<=": ("at most", "no more than", "not more than", "a maximum of"),
    ">=": ("at least", "no less than", "a minimum of", "not less than"),
    "==": ("exactly", "precisely"),
    "minimize": ("minimize", "keep as low as possible", "make as small as possible"),
    "maximize": ("maximize", "make as large as possible", "get the highest possible"),
    "framing": ("", "", "Consider the following planning problem.", "Read the situation below and formulate it as an optimization model.",
                "A planner has asked for help with a decision.", "The following case comes from day-to-day operations."),
    "goal_min": ("What is the minimum total cost?", "Find the lowest possible total cost.",
                 "Determine the plan with the smallest total cost and report that cost."),
    "goal_max": ("What is the maximum total profit?", "Find the largest achievable total profit.",
                 "Determine the plan with the highest total profit and report that profit."),
}


def phrase(rng: np.random.Generator, key: str) -> str:
    options = PHRASES[key]
    return options[int(rng.integers(len(options)))]
