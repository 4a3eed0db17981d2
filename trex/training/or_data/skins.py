"""Industry skins: the words a problem is told in, kept apart from its structure.

A skin maps abstract roles (the things a family talks about: sources, products, workers, ...) to
nouns of one industry.  Every family uses every skin, so the skin never gives the family away.
Entities are named (``the Dayton plant``, ``Maria``, ``Aurora``, ``the third week``) from the
pools below, drawn per instance by :meth:`Skin.with_names`; a plain skin labels them with letters
(``Plant C``). Names never hold digits or number words, so they add no numbers to the text.
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


# Name pools (no digits, no number words). Which pool a role draws from, and how a name is joined
# to the role's noun, is the table ROLE_NAMING.
PLACES = ("Dayton", "Fresno", "Tulsa", "Boise", "Reno", "Akron", "Austin", "Denver", "Omaha", "Toledo", "Spokane",
          "Macon", "Laredo", "Provo", "Tacoma", "Mobile", "Eugene", "Salem", "Peoria", "Joliet", "Madison", "Aurora",
          "Durham", "Raleigh", "Savannah", "Albany", "Bangor", "Duluth", "Fargo", "Helena", "Juneau", "Lansing",
          "Newark", "Ogden", "Pueblo", "Quincy", "Racine", "Topeka", "Utica", "Waco", "Yuma", "Elgin", "Flint",
          "Gary", "Hilo", "Irvine", "Kenosha", "Lowell", "Medford", "Norman", "Orem", "Pasco", "Rockford", "Sparks")
PEOPLE = ("Maria", "James", "Aisha", "Chen", "Fatima", "Lucas", "Priya", "Omar", "Sofia", "Daniel", "Yuki", "Ahmed",
          "Elena", "Kwame", "Ingrid", "Mateo", "Leila", "Noah", "Hana", "Ravi", "Olga", "Diego", "Grace", "Tariq",
          "Amara", "Felix", "Mei", "Jonas", "Zara", "Hugo", "Nadia", "Pablo", "Ines", "Kofi", "Lena", "Arjun",
          "Chloe", "Sami", "Vera", "Emil", "Rosa", "Theo", "Anya", "Bruno", "Dalia", "Ezra", "Freya", "Gus")
BRANDS = ("Aurora", "Summit", "Cedar", "Falcon", "Harbor", "Juniper", "Maple", "Nova", "Orchid", "Pioneer", "Quartz",
          "Ridge", "Sierra", "Tundra", "Vertex", "Willow", "Zenith", "Alder", "Beacon", "Comet", "Delta", "Ember",
          "Fjord", "Granite", "Horizon", "Iris", "Jasper", "Kestrel", "Lotus", "Meadow", "Nimbus", "Onyx", "Prairie",
          "Raven", "Saffron", "Tidal", "Umber", "Violet", "Aspen", "Birch", "Coral", "Dune", "Elm", "Flint", "Glacier",
          "Hazel", "Indigo", "Lark", "Mesa", "Oak", "Pine", "Sage", "Spruce", "Thistle", "Vale", "Wren")
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
            "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
            "eighteenth", "nineteenth", "twentieth")
# role -> (pool, how the name and the singular noun combine); roles not named keep letter labels.
ROLE_NAMING = {
    "source": (PLACES, "{name} {noun}"), "sink": (PLACES, "{name} {noun}"), "facility": (PLACES, "{name} site"),
    "customer": (PLACES, "{name} {noun}"), "node": (PLACES, "{name} {noun}"), "zone": (PLACES, "{name}"),
    "worker": (PEOPLE, "{name}"), "product": (BRANDS, "{name}"), "item": (BRANDS, "{name}"),
    "project": (BRANDS, "the {name} {noun}"), "asset": (BRANDS, "the {name} {noun}"),
    "ingredient": (BRANDS, "{name}"), "raw": (BRANDS, "{name}"), "blend": (BRANDS, "{name}"),
    "container": (BRANDS, "{name}"), "service": (BRANDS, "the {name} {noun}"), "task": (BRANDS, "the {name} {noun}"),
    "period": (ORDINALS, "{Name} {noun}"), "shift": (ORDINALS, "{Name} {noun}"),
}
NAMED_SHARE = 0.85   # the other instances keep letter labels ("Plant C"), as some benchmarks do


@dataclass(frozen=True)
class Skin:
    name: str
    table: dict
    name_seed: int | None = None     # None: letter labels; else entity names drawn with this seed

    def noun(self, role: str, plural: bool = False) -> str:
        singular, _, many = self.table[role].partition("/")
        return many if plural else singular

    def with_names(self, rng: np.random.Generator) -> "Skin":
        """This skin naming its entities (most of the time) with names drawn from ``rng``."""
        if rng.random() >= NAMED_SHARE:
            return self
        return Skin(self.name, self.table, int(rng.integers(2**31)))

    def names(self, role: str, n: int) -> list[str]:
        if self.name_seed is not None and role in ROLE_NAMING and n <= len(ROLE_NAMING[role][0]):
            pool, pattern = ROLE_NAMING[role]
            rng = np.random.default_rng([self.name_seed, sum(map(ord, role))])
            picked = [pool[i] for i in (range(n) if pool is ORDINALS else rng.permutation(len(pool))[:n])]
            noun = self.noun(role).split(" ")[-1]
            return [pattern.format(name=p, Name=p[:1].upper() + p[1:], noun=noun) for p in picked]
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


# Opening sentences and closing questions are built from parts (every combination is one sentence,
# so a corpus does not repeat the same few): opener x request, and verb x quantity x qualifier.
_OPENERS = ("Consider the following planning problem", "Read the situation below", "A planner has asked for help",
            "The following case comes from day-to-day operations", "Here is a decision problem from practice",
            "The management team faces the decision described below", "A consultant was handed the case below",
            "This scenario comes from an operations review", "The analysts describe the situation as follows",
            "The case below was raised at a planning meeting", "An operations manager describes a decision",
            "The following situation needs a quantitative answer")
_REQUESTS = ("formulate it as an optimization model", "build a mathematical model of it",
             "write it as a linear or integer program", "model it and solve it", "set it up as an optimization problem",
             "state the decision variables, objective and constraints", "find the best plan",
             "work out the optimal decision")
_ASK_VERBS = ("What is", "Find", "Determine", "Compute", "Work out", "Report", "Calculate", "Give")
_MIN_QUANTITIES = ("the minimum total cost", "the lowest possible total cost", "the smallest achievable total cost",
                   "the least total cost")
_MAX_QUANTITIES = ("the maximum total profit", "the largest achievable total profit", "the highest possible total profit",
                   "the greatest total profit")
_QUALIFIERS = ("", " of an optimal plan", " that can be achieved", " under these conditions")


def _asks(quantities):
    return tuple(f"{verb} {q}{tail}{'?' if verb == 'What is' else '.'}"
                 for verb in _ASK_VERBS for q in quantities for tail in _QUALIFIERS)


# Phrase variants, chosen at random when rendering (surface variety, same meaning).
PHRASES = {
    "<=": ("at most", "no more than", "not more than", "a maximum of", "up to"),
    ">=": ("at least", "no less than", "a minimum of", "not less than", "no fewer than"),
    "==": ("exactly", "precisely"),
    "minimize": ("minimize", "keep as low as possible", "make as small as possible"),
    "maximize": ("maximize", "make as large as possible", "get the highest possible"),
    "framing": ("",) * 32 + tuple(f"{o}; {r}." for o in _OPENERS
                                  for r in _REQUESTS),
    "goal_min": _asks(_MIN_QUANTITIES),
    "goal_max": _asks(_MAX_QUANTITIES),
}


def phrase(rng: np.random.Generator, key: str) -> str:
    options = PHRASES[key]
    return options[int(rng.integers(len(options)))]
