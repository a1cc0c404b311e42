"""Built-in vocabulary for synthetic pages: natural English words, a few rarer words (the targets of
`present` unit tests), numbers, currencies, and short Chinese phrases.

Everything is generated from `random.Random`, so a page is a pure function of its seed. The word lists are
small on purpose: a small BPE learns them quickly, and the grammar templates keep the text natural enough
that a decoder's language prior helps rather than hurts.
"""

from __future__ import annotations

import random

NOUNS = (
    "system model report market growth policy region project network method result value budget sample "
    "study process energy water price company product service customer board council school student "
    "teacher library museum river bridge harbour station airport factory garden village city country "
    "table figure chapter section paper letter record archive memo review survey team committee office "
    "engine sensor signal circuit battery panel window door road railway vessel cargo crop harvest field "
    "forest island coast valley mountain weather season winter summer spring autumn morning evening year "
    "month week quarter decade century history future plan strategy goal target risk cost income revenue "
    "profit loss share stock bond loan rate index level trend pattern change decision meeting agreement "
    "contract license patent design prototype version update release feature option setting document page "
    "article journal volume issue edition author editor reader audience member partner supplier vendor "
    "client patient doctor nurse hospital clinic treatment trial dose protein cell tissue gene enzyme "
    "molecule compound solution mixture surface layer boundary interval function variable parameter "
    "estimate error measure scale unit length width height weight speed pressure temperature density"
).split()

ADJECTIVES = (
    "new old large small early late recent annual monthly local national global public private central "
    "northern southern eastern western main key major minor final initial average total net gross high "
    "low stable steady rapid slow strong weak clear simple complex modern ancient quiet busy open closed "
    "careful detailed brief formal short long wide narrow deep shallow bright dark warm cold dry fresh "
    "green blue red golden silver wooden regional urban rural technical practical physical digital "
    "financial economic social political legal medical scientific historical natural industrial "
    "commercial agricultural coastal internal external primary secondary useful common rare precise"
).split()

VERBS_PAST = (
    "reported increased reduced improved measured recorded described reviewed approved updated showed "
    "explained confirmed estimated compared tested built opened closed moved changed reached supported "
    "replaced extended followed produced required included received published presented collected "
    "analysed adopted announced completed expanded designed delivered launched monitored observed "
    "prepared proposed recommended restored shipped signed studied visited"
).split()

ADVERBS = (
    "quickly slowly carefully clearly steadily slightly sharply largely mostly nearly recently finally "
    "gradually briefly formally jointly widely closely"
).split()

PREPOSITIONS = "in across within during after before near along over under through beyond".split()

CONNECTORS = ("However", "In addition", "As a result", "Meanwhile", "For example", "In practice", "Overall")

NAMES = (
    "Adams Baker Carter Davies Evans Fischer Garcia Hughes Ito Jensen Kowalski Lopez Martin Novak Okafor "
    "Patel Quinn Rossi Schmidt Tanaka Ueda Varga Weber Young Zhang"
).split()

PLACES = (
    "Aberdeen Bergen Bristol Cork Dresden Geneva Halifax Kyoto Lisbon Lyon Madras Nairobi Oslo Porto "
    "Quebec Seville Tampere Utrecht Valencia Wellington York Zurich"
).split()

# Longer, rarer words: each page uses a few, and `present` tests prefer them (as olmOCR-Bench does).
RARE_WORDS = (
    "photosynthesis heterogeneous electrolysis chromatography thermodynamics biodiversity cartography "
    "hydrology metallurgy infrastructure archaeology sedimentation precipitation calibration "
    "interoperability spectroscopy crystallography fermentation irrigation navigation amortisation "
    "depreciation procurement reconciliation jurisprudence epidemiology immunology neurology geology "
    "seismology oceanography meteorology astronomy agronomy ergonomics hydraulics pneumatics acoustics "
    "optics topology algorithm histogram quadrature eigenvalue polynomial logarithm asymptote manuscript "
    "almanac tributary estuary archipelago glacier plateau monsoon aquifer catalyst polymer isotope "
    "turbine dynamo lithography vaccination audit dividend tariff subsidy consortium"
).split()

TITLE_WORDS = (
    "Annual Review Survey Notes Results Methods Overview Summary Analysis Report Findings Outlook "
    "Introduction Background Discussion Conclusion Appendix Budget Schedule Inventory Performance "
    "Operations Research Development Quality Safety Training Design Evaluation Planning"
).split()

UNITS = ("kg", "km", "m", "cm", "mm", "kW", "MW", "ms", "s", "h", "mL", "L", "GB", "MB", "Hz", "kPa")

# Short Chinese phrases (subject, verb-object, complement) combined into natural sentences; the characters
# are all common ones that Noto Sans CJK covers.
ZH_SUBJECTS = (
    "本公司",
    "研究团队",
    "地方政府",
    "该项目",
    "这一系统",
    "市场需求",
    "本年度收入",
    "实验结果",
    "学校",
    "医院",
    "委员会",
    "新产品",
    "城市交通",
    "农业生产",
    "技术部门",
)
ZH_PREDICATES = (
    "显著提高了工作效率",
    "在第三季度保持稳定增长",
    "完成了全部测试任务",
    "降低了运行成本",
    "扩大了服务范围",
    "得到了广泛关注",
    "改善了数据质量",
    "提出了新的发展目标",
    "加强了风险管理",
    "更新了设计方案",
    "增加了研发投入",
    "取得了良好的效果",
    "减少了能源消耗",
    "发布了年度报告",
    "建立了合作关系",
)
ZH_TITLES = (
    "年度报告",
    "研究方法",
    "实验结果",
    "市场分析",
    "财务摘要",
    "项目概述",
    "技术说明",
    "数据统计",
    "发展规划",
    "结论与展望",
    "质量评估",
    "运营情况",
)
# City names: row labels of Chinese tables.
ZH_CITIES = (
    "北京",
    "上海",
    "广州",
    "深圳",
    "杭州",
    "南京",
    "成都",
    "武汉",
    "天津",
    "重庆",
    "西安",
    "苏州",
    "青岛",
    "长沙",
    "郑州",
    "厦门",
    "大连",
    "宁波",
    "合肥",
    "昆明",
    "济南",
    "福州",
)


def number(rng: random.Random, kind: str | None = None) -> str:
    """A number as printed in reports: integer, thousands-separated, decimal, percentage, or a year."""
    kind = kind or rng.choice(("int", "big", "dec", "pct", "year"))
    if kind == "int":
        return str(rng.randint(2, 999))
    if kind == "big":
        return f"{rng.randint(1000, 99999):,}"
    if kind == "dec":
        return f"{rng.uniform(0.1, 999):.{rng.choice((1, 2))}f}"
    if kind == "pct":
        return f"{rng.uniform(0.1, 99.9):.1f}%"
    return str(rng.randint(1950, 2030))


def currency(rng: random.Random, dollar_ok: bool = True) -> str:
    """A money amount. `dollar_ok=False` avoids `$`, which would pair with LaTeX `$` delimiters."""
    symbols = ("$", "€", "£") if dollar_ok else ("€", "£")
    amount = rng.choice(
        (f"{rng.randint(1, 999)}", f"{rng.uniform(1, 9999):,.2f}", f"{rng.randint(1000, 99999):,}")
    )
    return f"{rng.choice(symbols)}{amount}"


def quantity(rng: random.Random) -> str:
    return f"{number(rng, rng.choice(('int', 'dec')))} {rng.choice(UNITS)}"


def _noun_phrase(rng: random.Random, rare_share: float) -> str:
    if rng.random() < rare_share:
        noun = rng.choice(RARE_WORDS)
    else:
        noun = rng.choice(NOUNS)
    if rng.random() < 0.5:
        return f"the {rng.choice(ADJECTIVES)} {noun}"
    return f"the {noun}"


def sentence(rng: random.Random, max_words: int = 16, rare_share: float = 0.15, numbers: bool = True) -> str:
    """One English sentence from a handful of grammar templates, ending with a full stop."""
    subject = _noun_phrase(rng, rare_share)
    verb = rng.choice(VERBS_PAST)
    obj = _noun_phrase(rng, rare_share)
    parts = [subject, verb, obj]
    if rng.random() < 0.5:
        parts.append(f"{rng.choice(PREPOSITIONS)} {_noun_phrase(rng, rare_share)}")
    if numbers and rng.random() < 0.5:
        extra = rng.choice(
            (
                f"by {number(rng, 'pct')}",
                f"in {number(rng, 'year')}",
                f"to {number(rng, 'big')} units",
                f"at {quantity(rng)}",
                f"near {rng.choice(PLACES)}",
            )
        )
        parts.append(extra)
    if rng.random() < 0.2:
        parts.insert(2, rng.choice(ADVERBS))
    words = trim(" ".join(parts).split()[:max_words])
    text = " ".join(words)
    if rng.random() < 0.2:
        text = f"{rng.choice(CONNECTORS)}, {text}"
    return text[0].upper() + text[1:] + "."


# Words a truncated phrase must not end with (it would read as cut off).
_DANGLING = (
    set(PREPOSITIONS) | set(ADJECTIVES) | set(ADVERBS) | {"the", "by", "to", "at", "of", "and", "units"}
)


def trim(words: list[str]) -> list[str]:
    """Drop trailing words that would leave a truncated phrase dangling ("... under the")."""
    words = list(words)
    while len(words) > 2 and (words[-1].lower().strip(",") in _DANGLING or words[-1].endswith(",")):
        words.pop()
    return words


def phrase(rng: random.Random, max_words: int = 6) -> str:
    """A short clause without connectors or final stop (list items, single lines)."""
    subject = _noun_phrase(rng, 0.15)
    words = f"{subject} {rng.choice(VERBS_PAST)} {_noun_phrase(rng, 0.15)}".split()
    text = " ".join(trim(words[:max_words]))
    return text[0].upper() + text[1:]


def title(rng: random.Random, max_words: int = 5, numbered: bool = True) -> str:
    n = rng.randint(1, max_words)
    words = [rng.choice(TITLE_WORDS)]
    pool = (ADJECTIVES, NOUNS, TITLE_WORDS)
    while len(words) < n:
        words.append(rng.choice(rng.choice(pool)))
    if rng.random() < 0.3:
        words.append(rng.choice(("of", "for", "in")))
        words.append(rng.choice(NOUNS + PLACES))
    text = " ".join(w.capitalize() if w.islower() and w not in ("of", "for", "in") else w for w in words)
    if rng.random() < 0.25:
        numbered_now = numbered and rng.random() < 0.5
        text = f"{rng.randint(1, 9)}. {text}" if numbered_now else f"{text} {number(rng, 'year')}"
    return text


def list_item(rng: random.Random, max_words: int = 8) -> str:
    choice = rng.random()
    if choice < 0.4:
        return phrase(rng, max_words)
    if choice < 0.7:
        return f"{rng.choice(ADJECTIVES).capitalize()} {rng.choice(NOUNS)}: {number(rng)}"
    return f"{rng.choice(NAMES)}, {rng.choice(PLACES)} ({number(rng, 'year')})"


def zh_sentence(rng: random.Random) -> str:
    text = rng.choice(ZH_SUBJECTS) + rng.choice(ZH_PREDICATES)
    if rng.random() < 0.5:
        text += f"，同比增长{number(rng, 'pct')}"
    return text + "。"


def zh_title(rng: random.Random, numbered: bool = True) -> str:
    title_text = rng.choice(ZH_TITLES)
    if numbered and rng.random() < 0.4:
        title_text = f"{rng.randint(1, 9)}. {title_text}"
    return title_text


def header_text(rng: random.Random) -> str:
    """Running-header text (never part of the ground truth; the target of `absent` tests)."""
    return rng.choice(
        (
            f"Journal of {rng.choice(NOUNS).capitalize()} {rng.choice(TITLE_WORDS)}"
            f" | Vol. {rng.randint(1, 60)}",
            f"{rng.choice(PLACES)} {rng.choice(TITLE_WORDS)} {number(rng, 'year')}",
            f"{rng.choice(NAMES)} et al. | {rng.choice(TITLE_WORDS)} {rng.choice(TITLE_WORDS)}",
            f"Internal {rng.choice(TITLE_WORDS)} - Draft {rng.randint(1, 9)}.{rng.randint(0, 9)}",
        )
    )


def footer_text(rng: random.Random) -> str:
    return rng.choice(
        (
            f"Copyright {number(rng, 'year')} {rng.choice(PLACES)}"
            f" {rng.choice(('Press', 'Group', 'Council'))}",
            f"Printed {rng.randint(1, 28)} {rng.choice(('March', 'June', 'October'))} {number(rng, 'year')}",
            f"www.{rng.choice(PLACES).lower()}-{rng.choice(NOUNS)}.org",
        )
    )
