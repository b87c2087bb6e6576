"""Templates of the knowledge-update benchmark: kinds of fact that change, and chat around them.

Each :class:`FactTemplate` is one kind of fact a user (or their team) states and later
changes: a pool of values, several wordings of the first statement and of a change, the
questions asked about the current value (with a cue word such as "now" or "still", and
in plain present tense), about a past value, the ways a user asks to forget it, and
lines about the same kind of thing that are not about the user's own fact (a
sister's city, another team's database), so the distractors share the fact's
vocabulary. :data:`CHAT_LINES` are unrelated chat turns, some with the cue words
and verbs of the questions ("these days", "moved", "switched").

Placeholders: ``{value}`` (a statement's value, the current value in a forget request),
``{old}`` and ``{new}`` (a change), ``{next}`` (the value that followed the one a past
question asks about), ``{other}`` (a pool value the conversation does not use).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CHAT_LINES", "CUE_WORDS", "FACT_TEMPLATES", "FactTemplate"]

CUE_WORDS = (
    "currently",
    "current",
    "now",
    "these days",
    "at the moment",
    "still",
    "nowadays",
    "right now",
    "today",
)
"""Words that mark a question as asking for the value that holds today."""


@dataclass(frozen=True)
class FactTemplate:
    """One kind of changing fact: its values and every wording the generator draws from."""

    kind: str
    subject: str
    """``user`` (a personal fact) or ``team`` (a decision of the user's team)."""
    values: tuple[str, ...]
    first: tuple[str, ...]
    change: tuple[str, ...]
    current_cue: tuple[str, ...]
    current_plain: tuple[str, ...]
    past: tuple[str, ...]
    forget: tuple[str, ...]
    near: tuple[str, ...]


FACT_TEMPLATES: tuple[FactTemplate, ...] = (
    FactTemplate(
        kind="home_city",
        subject="user",
        values=(
            "Austin",
            "Denver",
            "Seattle",
            "Portland",
            "Chicago",
            "Boston",
            "Atlanta",
            "Phoenix",
            "Nashville",
            "San Diego",
            "Minneapolis",
            "Pittsburgh",
            "Raleigh",
            "Salt Lake City",
        ),
        first=(
            "I just moved to {value} and I'm still unpacking boxes.",
            "I live in {value}, have done for a few years.",
            "We finally found an apartment in {value} that we like.",
            "Home for me is {value}, right by the river.",
        ),
        change=(
            "I'm all settled in {new} now.",
            "Big news: I moved from {old} to {new} last weekend.",
            "Signed the lease, so I live in {new} from this month.",
            "Packed up and left {old}; my new place is in {new}.",
        ),
        current_cue=(
            "Where does the user currently live?",
            "Which city is the user living in now?",
            "Where is the user based these days?",
            "Does the user still live in {old}?",
        ),
        current_plain=(
            "Where does the user live?",
            "Which city is the user's home?",
        ),
        past=(
            "Where did the user live before {next}?",
            "Which city did the user live in before moving to {next}?",
        ),
        forget=(
            "Please forget where I live.",
            "Forget the city I live in, I'd rather you didn't keep that.",
            "Forget that I live in {value}.",
        ),
        near=(
            "My sister just bought a house in {other}.",
            "We're flying to {other} for a conference next month.",
            "Have you ever been to {other}? The food scene there is great.",
            "My old college roommate lives in {other} now.",
        ),
    ),
    FactTemplate(
        kind="employer",
        subject="user",
        values=(
            "Acme Analytics",
            "Northwind",
            "Globex",
            "Initech",
            "Umbrella Health",
            "Stark Logistics",
            "Wayne Financial",
            "Hooli",
            "Vandelay Industries",
            "Soylent Foods",
            "Cyberdyne",
            "Tyrell Systems",
        ),
        first=(
            "I work at {value} on the data platform team.",
            "My employer is {value}, mostly remote.",
            "I've been at {value} for about three years.",
        ),
        change=(
            "Today was my first day at {new}!",
            "I left {old} and joined {new}.",
            "I accepted the offer from {new}, so I work there now.",
            "Handed in my notice at {old}; I'm with {new} from Monday.",
        ),
        current_cue=(
            "Where does the user work now?",
            "Which company is the user currently employed by?",
            "Who is the user's employer these days?",
            "Does the user still work at {old}?",
        ),
        current_plain=(
            "Where does the user work?",
            "Which company employs the user?",
        ),
        past=(
            "Where did the user work before {next}?",
            "Which company employed the user before they joined {next}?",
        ),
        forget=(
            "Please forget where I work.",
            "Forget my employer's name, please.",
            "Forget that I work at {value}.",
        ),
        near=(
            "My brother interviewed at {other} last week.",
            "{other} announced layoffs today, scary stuff.",
            "A recruiter from {other} keeps emailing me.",
            "I read an article about the new {other} office.",
        ),
    ),
    FactTemplate(
        kind="job_role",
        subject="user",
        values=(
            "data engineer",
            "product manager",
            "backend developer",
            "UX designer",
            "delivery manager",
            "site reliability engineer",
            "data scientist",
            "technical writer",
            "QA lead",
            "solutions architect",
        ),
        first=(
            "I'm a {value} at my company.",
            "My job title is {value}.",
            "I work as a {value}, which I enjoy.",
        ),
        change=(
            "I got promoted, I'm a {new} now.",
            "I switched roles from {old} to {new}.",
            "My title changed to {new} this month.",
        ),
        current_cue=(
            "What is the user's job title now?",
            "What role does the user currently have?",
            "What does the user work as these days?",
            "Is the user still a {old}?",
        ),
        current_plain=(
            "What is the user's job?",
            "What role does the user have at work?",
        ),
        past=(
            "What was the user's role before becoming a {next}?",
            "What did the user work as before they were a {next}?",
        ),
        forget=(
            "Please forget my job title.",
            "Forget what my role at work is.",
        ),
        near=(
            "We're hiring a {other} on my team.",
            "My friend is a {other} and loves it.",
            "I had coffee with a {other} from another team.",
        ),
    ),
    FactTemplate(
        kind="pet_name",
        subject="user",
        values=(
            "Rex",
            "Biscuit",
            "Luna",
            "Max",
            "Pepper",
            "Milo",
            "Daisy",
            "Bruno",
            "Ziggy",
            "Nala",
            "Scout",
            "Olive",
        ),
        first=(
            "I have a dog named {value}.",
            "My dog {value} woke me up at six again.",
            "We adopted a puppy and named it {value}.",
        ),
        change=(
            "We adopted a new dog from the shelter; her name is {new}.",
            "Sadly {old} passed away in the spring; we've since adopted {new}.",
            "Our new dog {new} is settling in well.",
        ),
        current_cue=(
            "What is the name of the user's dog now?",
            "What is the user's dog currently called?",
            "Which dog does the user have these days?",
        ),
        current_plain=(
            "What is the user's dog called?",
            "What's the name of the user's dog?",
        ),
        past=(
            "What was the user's dog called before {next}?",
            "Which dog did the user have before {next}?",
        ),
        forget=(
            "Forget that I have a dog named {value}.",
            "Please forget everything about my dog.",
        ),
        near=(
            "My neighbour's dog {other} barks all night.",
            "At the park I met a beagle called {other}.",
            "My niece wants to name her hamster {other}.",
        ),
    ),
    FactTemplate(
        kind="partner_name",
        subject="user",
        values=(
            "Sam",
            "Jordan",
            "Priya",
            "Alex",
            "Maya",
            "Chris",
            "Elena",
            "Noah",
            "Aisha",
            "Daniel",
            "Hana",
            "Leo",
        ),
        first=(
            "My partner {value} and I went hiking on Sunday.",
            "I live with my partner, {value}.",
            "{value}, my partner, is a nurse at the children's hospital.",
        ),
        change=(
            "{old} and I broke up; I'm seeing {new} now.",
            "I've been dating {new} for a few months.",
            "My new partner {new} is cooking dinner tonight.",
        ),
        current_cue=(
            "Who is the user's partner now?",
            "Who is the user currently dating?",
            "Is the user still with {old}?",
        ),
        current_plain=(
            "Who is the user's partner?",
            "What is the name of the user's partner?",
        ),
        past=(
            "Who was the user's partner before {next}?",
            "Who did the user date before {next}?",
        ),
        forget=(
            "Please forget my partner's name.",
            "Forget everything I told you about {value}.",
        ),
        near=(
            "My coworker {other} just got engaged.",
            "{other} from accounting brought cake today.",
            "My cousin {other} is visiting next week.",
        ),
    ),
    FactTemplate(
        kind="diet",
        subject="user",
        values=(
            "vegetarian",
            "vegan",
            "pescatarian",
            "flexitarian",
            "keto",
            "paleo",
            "gluten-free",
            "dairy-free",
        ),
        first=(
            "I'm {value}, so keep that in mind for restaurant ideas.",
            "I've been {value} for two years.",
            "Just so you know, I eat {value}.",
        ),
        change=(
            "I'm not {old} anymore; I'm {new} now.",
            "I stopped being {old} and switched to a {new} diet.",
            "My doctor suggested {new} eating, so I've dropped being {old}.",
        ),
        current_cue=(
            "Is the user still {old}?",
            "What diet does the user follow now?",
            "What does the user currently eat?",
        ),
        current_plain=(
            "What diet does the user follow?",
            "Is the user {old}?",
        ),
        past=(
            "What diet did the user follow before going {next}?",
            "What did the user eat before switching to {next}?",
        ),
        forget=(
            "Please forget my dietary preferences.",
            "Forget what I said about my diet.",
        ),
        near=(
            "My sister went {other} last month.",
            "There's a new {other} place downtown.",
            "The office party had a {other} option.",
        ),
    ),
    FactTemplate(
        kind="hobby",
        subject="user",
        values=(
            "rock climbing",
            "pottery",
            "chess",
            "woodworking",
            "salsa dancing",
            "birdwatching",
            "painting",
            "gardening",
            "knitting",
            "photography",
            "surfing",
            "bread baking",
        ),
        first=(
            "My main hobby is {value}.",
            "I spend most weekends on {value}.",
            "I got really into {value} this year.",
        ),
        change=(
            "I've dropped {old}; {new} is my thing now.",
            "All my free time goes to {new} lately.",
            "I picked up {new} and haven't done {old} in weeks.",
        ),
        current_cue=(
            "What hobby is the user into now?",
            "What does the user currently do in their free time?",
            "Is the user still into {old}?",
        ),
        current_plain=(
            "What is the user's hobby?",
            "What does the user do for fun?",
        ),
        past=(
            "What was the user's hobby before {next}?",
            "What did the user do for fun before taking up {next}?",
        ),
        forget=(
            "Forget what my hobbies are.",
            "Please forget that I'm into {value}.",
        ),
        near=(
            "My dad signed up for a {other} class.",
            "I watched a documentary about {other}.",
            "There's a {other} meetup near the office.",
        ),
    ),
    FactTemplate(
        kind="favourite_food",
        subject="user",
        values=(
            "ramen",
            "tacos",
            "pad thai",
            "lasagna",
            "sushi",
            "biryani",
            "pho",
            "falafel",
            "pizza",
            "dumplings",
            "paella",
            "curry",
        ),
        first=(
            "My favourite food is {value}.",
            "Nothing beats {value}, it's my favourite.",
            "If I could eat one thing forever it'd be {value}.",
        ),
        change=(
            "Honestly {new} has replaced {old} as my favourite food.",
            "My new favourite food is {new}.",
            "I'm over {old}; {new} is my favourite now.",
        ),
        current_cue=(
            "What is the user's favourite food now?",
            "Which food does the user currently like best?",
            "Is {old} still the user's favourite food?",
        ),
        current_plain=(
            "What is the user's favourite food?",
            "What food does the user like best?",
        ),
        past=(
            "What was the user's favourite food before {next}?",
            "Which dish did the user like best before {next}?",
        ),
        forget=(
            "Please forget my favourite food.",
            "Forget what I said about my favourite food.",
        ),
        near=(
            "We ordered {other} for the team lunch.",
            "My roommate made {other} last night.",
            "There's a {other} truck outside the office today.",
        ),
    ),
    FactTemplate(
        kind="favourite_colour",
        subject="user",
        values=(
            "blue",
            "green",
            "purple",
            "teal",
            "orange",
            "red",
            "yellow",
            "maroon",
            "navy",
            "coral",
            "lavender",
            "black",
        ),
        first=(
            "My favourite colour is {value}.",
            "I love {value}, it's been my favourite colour forever.",
            "Anything in {value} and I'm sold, it's my favourite colour.",
        ),
        change=(
            "My favourite colour is {new} now, not {old}.",
            "I've come around to {new}; it's my new favourite colour.",
            "I repainted my room {new} because that's my favourite colour lately.",
        ),
        current_cue=(
            "What is the user's favourite colour now?",
            "Which colour does the user currently like best?",
            "What's the user's favourite colour these days?",
        ),
        current_plain=(
            "What is the user's favourite colour?",
            "Which colour does the user like most?",
        ),
        past=(
            "What was the user's favourite colour before {next}?",
            "Which colour did the user prefer before {next}?",
        ),
        forget=(
            "Please forget my favourite colour.",
            "Forget which colour I like.",
        ),
        near=(
            "I bought a {other} jacket on sale.",
            "The new company logo is {other}.",
            "My bike is {other} and a bit rusty.",
        ),
    ),
    FactTemplate(
        kind="favourite_book",
        subject="user",
        values=(
            "Dune",
            "Middlemarch",
            "The Hobbit",
            "Beloved",
            "Neuromancer",
            "Jane Eyre",
            "The Road",
            "Emma",
            "Foundation",
            "Rebecca",
            "Ulysses",
            "Circe",
        ),
        first=(
            "My favourite book is {value}.",
            "I've reread {value} five times; it's my favourite book.",
            "{value} is the best book I've ever read.",
        ),
        change=(
            "I think {new} has become my favourite book.",
            "Move over {old}, my favourite book is {new} now.",
            "After rereading it, {new} is my new favourite book.",
        ),
        current_cue=(
            "What is the user's favourite book now?",
            "Which book does the user currently love most?",
            "Is {old} still the user's favourite book?",
        ),
        current_plain=(
            "What is the user's favourite book?",
            "Which book does the user like best?",
        ),
        past=(
            "What was the user's favourite book before {next}?",
            "Which book did the user love most before {next}?",
        ),
        forget=(
            "Please forget my favourite book.",
            "Forget what I said about {value}.",
        ),
        near=(
            "My book club picked {other} for next month.",
            "I saw a copy of {other} at the airport.",
            "My teacher made us read {other} in school.",
        ),
    ),
    FactTemplate(
        kind="favourite_film",
        subject="user",
        values=(
            "Alien",
            "Casablanca",
            "Heat",
            "Arrival",
            "Jaws",
            "Vertigo",
            "Up",
            "Parasite",
            "Inception",
            "Memento",
            "Fargo",
            "Amadeus",
        ),
        first=(
            "My favourite film is {value}.",
            "I could watch {value} every week, it's my favourite movie.",
            "{value} is the best film ever made, fight me.",
        ),
        change=(
            "I rewatched {new} and it's my favourite film now.",
            "Sorry {old}, {new} is my new favourite movie.",
            "{new} has overtaken {old} as my favourite film.",
        ),
        current_cue=(
            "What is the user's favourite film now?",
            "Which movie does the user currently like best?",
            "Is {old} still the user's favourite movie?",
        ),
        current_plain=(
            "What is the user's favourite film?",
            "Which movie does the user like most?",
        ),
        past=(
            "What was the user's favourite film before {next}?",
            "Which movie did the user like best before {next}?",
        ),
        forget=(
            "Please forget my favourite film.",
            "Forget which movie I like best.",
        ),
        near=(
            "We watched {other} at the outdoor cinema.",
            "{other} is on TV tonight.",
            "My kids want to see {other} again.",
        ),
    ),
    FactTemplate(
        kind="favourite_music",
        subject="user",
        values=(
            "jazz",
            "hip hop",
            "country",
            "techno",
            "folk",
            "classical",
            "metal",
            "reggae",
            "blues",
            "indie rock",
            "k-pop",
            "bossa nova",
        ),
        first=(
            "I mostly listen to {value}.",
            "{value} is my favourite kind of music.",
            "My playlists are all {value}.",
        ),
        change=(
            "I've been listening to {new} nonstop; it's my favourite now.",
            "I'm more into {new} than {old} lately.",
            "My favourite music used to be {old}, now it's {new}.",
        ),
        current_cue=(
            "What music does the user listen to now?",
            "What is the user's favourite genre these days?",
            "What kind of music does the user currently like?",
        ),
        current_plain=(
            "What music does the user like?",
            "What is the user's favourite kind of music?",
        ),
        past=(
            "What music did the user like before {next}?",
            "Which genre did the user prefer before getting into {next}?",
        ),
        forget=(
            "Forget my music taste, please.",
            "Please forget what music I like.",
        ),
        near=(
            "There's a {other} festival in town this weekend.",
            "My neighbour plays {other} really loud.",
            "The cafe was playing {other} all afternoon.",
        ),
    ),
    FactTemplate(
        kind="learning_language",
        subject="user",
        values=(
            "Spanish",
            "Japanese",
            "German",
            "Korean",
            "Italian",
            "Portuguese",
            "Mandarin",
            "French",
            "Arabic",
            "Dutch",
            "Swedish",
            "Hindi",
        ),
        first=(
            "I'm learning {value} on my lunch breaks.",
            "I've started {value} lessons twice a week.",
            "My goal this year is to get conversational in {value}.",
        ),
        change=(
            "I gave up on {old} and switched to learning {new}.",
            "I'm studying {new} instead of {old}.",
            "New year, new language: I'm learning {new}.",
        ),
        current_cue=(
            "Which language is the user learning now?",
            "What language is the user currently studying?",
            "Is the user still learning {old}?",
        ),
        current_plain=(
            "Which language is the user learning?",
            "What language does the user study?",
        ),
        past=(
            "Which language was the user learning before {next}?",
            "What language did the user study before switching to {next}?",
        ),
        forget=(
            "Please forget which language I'm learning.",
            "Forget that I'm learning {value}.",
        ),
        near=(
            "My colleague speaks fluent {other}.",
            "The menu was only in {other}.",
            "We hired a {other} translator for the launch.",
        ),
    ),
    FactTemplate(
        kind="phone_number",
        subject="user",
        values=(
            "(512) 555-0143",
            "(303) 555-0178",
            "(206) 555-0112",
            "(617) 555-0190",
            "(312) 555-0135",
            "(404) 555-0167",
            "(602) 555-0121",
            "(615) 555-0184",
            "(619) 555-0156",
            "(412) 555-0109",
            "(919) 555-0173",
            "(801) 555-0138",
        ),
        first=(
            "My phone number is {value}.",
            "You can reach me at {value}.",
            "Text me at {value} if the plans change.",
        ),
        change=(
            "I got a new phone number: {new}.",
            "My number changed to {new}; the old {old} is disconnected.",
            "Please use {new} from now on, I switched carriers.",
        ),
        current_cue=(
            "What is the user's phone number now?",
            "What number can the user currently be reached at?",
            "What's the user's phone number these days?",
        ),
        current_plain=(
            "What is the user's phone number?",
            "How can the user be reached by phone?",
        ),
        past=(
            "What was the user's phone number before {next}?",
            "Which number did the user have before switching to {next}?",
        ),
        forget=(
            "Please forget my phone number.",
            "Delete my phone number from your memory.",
            "Forget the number {value}, I don't want it stored.",
        ),
        near=(
            "The dentist's office number is {other}.",
            "My mom's new number is {other}.",
            "The delivery driver called from {other}.",
        ),
    ),
    FactTemplate(
        kind="current_book",
        subject="user",
        values=(
            "Project Hail Mary",
            "The Overstory",
            "Educated",
            "Sapiens",
            "Piranesi",
            "Klara and the Sun",
            "The Martian",
            "Atomic Habits",
            "Normal People",
            "The Goldfinch",
            "Station Eleven",
            "Shantaram",
        ),
        first=(
            "I started reading {value} last night.",
            "I'm halfway through {value}.",
            "{value} is on my nightstand, I read a chapter every evening.",
        ),
        change=(
            "Finished {old}! I've started {new}.",
            "I put {old} down and picked up {new}.",
            "I'm reading {new} at the moment, it's gripping.",
        ),
        current_cue=(
            "What book is the user reading now?",
            "Which book is the user currently reading?",
            "Is the user still reading {old}?",
        ),
        current_plain=(
            "What book is the user reading?",
            "What is the user reading?",
        ),
        past=(
            "What was the user reading before {next}?",
            "Which book did the user read before starting {next}?",
        ),
        forget=(
            "Please forget what I'm reading.",
            "Forget that I'm reading {value}.",
        ),
        near=(
            "My book club is arguing about {other}.",
            "The library has a waitlist for {other}.",
            "A friend lent me {other} but I haven't opened it.",
        ),
    ),
    FactTemplate(
        kind="project_name",
        subject="team",
        values=(
            "Falcon",
            "Osprey",
            "Nimbus",
            "Atlas",
            "Beacon",
            "Cobalt",
            "Juniper",
            "Quasar",
            "Tundra",
            "Meridian",
            "Saffron",
            "Kestrel",
        ),
        first=(
            "Our team's project is codenamed {value}.",
            "We're building the new checkout under the name {value}.",
            "The project I lead is called {value}.",
        ),
        change=(
            "We renamed the project from {old} to {new}.",
            "Marketing didn't like {old}, so the project is called {new} now.",
            "Heads up: {old} is officially {new} from today.",
        ),
        current_cue=(
            "What is the team's project called now?",
            "What is the project's current name?",
            "Is the project still called {old}?",
        ),
        current_plain=(
            "What is the team's project called?",
            "What is the name of the project?",
        ),
        past=(
            "What was the project called before {next}?",
            "What was the project's name before it became {next}?",
        ),
        forget=(
            "Please forget the project's codename.",
            "Forget the name {value}, it's confidential.",
        ),
        near=(
            "Another team has a project called {other}.",
            "{other} was the name of our hackathon entry.",
            "The {other} dashboard is down again.",
        ),
    ),
    FactTemplate(
        kind="database",
        subject="team",
        values=(
            "MySQL",
            "Postgres",
            "MongoDB",
            "DynamoDB",
            "Cassandra",
            "SQLite",
            "CockroachDB",
            "ClickHouse",
            "MariaDB",
            "Oracle",
            "Spanner",
            "Neo4j",
        ),
        first=(
            "We store billing data in {value}.",
            "The team chose {value} as the main database.",
            "Our backend runs on {value}.",
        ),
        change=(
            "We switched from {old} to {new} for billing.",
            "The migration is done: everything is on {new} now.",
            "After the outage we decided to move off {old} onto {new}.",
        ),
        current_cue=(
            "Which database does the team use now?",
            "What database is billing currently on?",
            "Is the team still on {old}?",
        ),
        current_plain=(
            "Which database does the team use?",
            "What database stores the billing data?",
        ),
        past=(
            "Which database did the team use before {next}?",
            "What was billing on before the move to {next}?",
        ),
        forget=(
            "Please forget which database we use.",
            "Forget what I said about our database.",
        ),
        near=(
            "The analytics team keeps their events in {other}.",
            "I watched a talk about {other} performance tuning.",
            "A vendor tried to sell us {other} support.",
        ),
    ),
    FactTemplate(
        kind="editor",
        subject="team",
        values=(
            "VS Code",
            "Neovim",
            "IntelliJ",
            "Emacs",
            "Sublime Text",
            "Zed",
            "PyCharm",
            "Helix",
            "Vim",
            "Eclipse",
            "Xcode",
            "Kate",
        ),
        first=(
            "Our team standardised on {value} as the editor.",
            "Everyone on the team codes in {value}.",
            "We use {value} for all our development.",
        ),
        change=(
            "The team moved from {old} to {new} last sprint.",
            "We all switched to {new} as our editor.",
            "{old} is out, the team uses {new} now.",
        ),
        current_cue=(
            "Which editor does the team use these days?",
            "What editor is the team currently using?",
            "Does the team still code in {old}?",
        ),
        current_plain=(
            "Which editor does the team use?",
            "What editor does the team code in?",
        ),
        past=(
            "Which editor did the team use before {next}?",
            "What did the team code in before switching to {next}?",
        ),
        forget=(
            "Forget which editor we use.",
            "Please forget the editor setup I described.",
        ),
        near=(
            "A new hire asked whether {other} is allowed.",
            "I saw a blog post comparing {other} plugins.",
            "My old company paid for {other} licences.",
        ),
    ),
    FactTemplate(
        kind="ci_system",
        subject="team",
        values=(
            "Jenkins",
            "GitHub Actions",
            "GitLab CI",
            "CircleCI",
            "Travis CI",
            "Buildkite",
            "TeamCity",
            "Drone",
            "Azure Pipelines",
            "Bamboo",
            "Woodpecker",
            "Tekton",
        ),
        first=(
            "Our builds run on {value}.",
            "We use {value} for CI.",
            "Every pull request goes through {value} before merge.",
        ),
        change=(
            "We migrated CI from {old} to {new}.",
            "Builds run on {new} now; we turned {old} off.",
            "The team replaced {old} with {new} for continuous integration.",
        ),
        current_cue=(
            "Which CI system does the team use now?",
            "Where do the team's builds currently run?",
            "What does the team use for CI these days?",
        ),
        current_plain=(
            "Which CI system does the team use?",
            "Where do the team's builds run?",
        ),
        past=(
            "Which CI system did the team use before {next}?",
            "Where did builds run before the move to {next}?",
        ),
        forget=(
            "Please forget our CI setup.",
            "Forget what I told you about {value}.",
        ),
        near=(
            "The open-source repo I contribute to uses {other}.",
            "{other} had an outage this morning.",
            "Someone proposed trying {other} at the retro.",
        ),
    ),
    FactTemplate(
        kind="car",
        subject="user",
        values=(
            "Honda Civic",
            "Toyota Corolla",
            "Subaru Outback",
            "Tesla Model 3",
            "Ford F-150",
            "Mazda 3",
            "Volkswagen Golf",
            "Kia Niro",
            "Hyundai Ioniq",
            "Volvo XC40",
            "Jeep Wrangler",
            "Mini Cooper",
        ),
        first=(
            "I drive a {value}.",
            "My car is a {value}, old but reliable.",
            "I commute in my {value} most days.",
        ),
        change=(
            "I sold the {old} and bought a {new}.",
            "Traded in my car; I drive a {new} now.",
            "Picked up my new {new} from the dealer today.",
        ),
        current_cue=(
            "What car does the user drive now?",
            "Which car does the user currently own?",
            "Does the user still drive a {old}?",
        ),
        current_plain=(
            "What car does the user drive?",
            "What car does the user own?",
        ),
        past=(
            "What car did the user drive before the {next}?",
            "Which car did the user own before buying the {next}?",
        ),
        forget=(
            "Please forget what car I drive.",
            "Forget that I own a {value}.",
        ),
        near=(
            "My neighbour just got a {other}.",
            "The rental place gave us a {other}.",
            "A {other} cut me off on the highway.",
        ),
    ),
    FactTemplate(
        kind="sport",
        subject="user",
        values=(
            "tennis",
            "swimming",
            "CrossFit",
            "yoga",
            "running",
            "cycling",
            "boxing",
            "pilates",
            "basketball",
            "rowing",
            "badminton",
            "spinning",
        ),
        first=(
            "I do {value} three times a week to stay fit.",
            "My workout of choice is {value}.",
            "{value} is how I stay in shape.",
        ),
        change=(
            "I switched from {old} to {new} at the gym.",
            "I do {new} instead of {old} since my knee injury.",
            "Signed up for {new}; I quit {old} last month.",
        ),
        current_cue=(
            "What sport does the user do now?",
            "How does the user currently stay in shape?",
            "Does the user still do {old}?",
        ),
        current_plain=(
            "What sport does the user do?",
            "How does the user stay fit?",
        ),
        past=(
            "What sport did the user do before {next}?",
            "How did the user keep fit before switching to {next}?",
        ),
        forget=(
            "Please forget my workout routine.",
            "Forget that I do {value}.",
        ),
        near=(
            "My gym added a {other} class.",
            "I watched a {other} competition on TV.",
            "My brother is training for a {other} competition.",
        ),
    ),
    FactTemplate(
        kind="cloud",
        subject="team",
        values=(
            "AWS",
            "Google Cloud",
            "Azure",
            "DigitalOcean",
            "Hetzner",
            "Linode",
            "Oracle Cloud",
            "Heroku",
            "Fly.io",
            "Vercel",
            "OVHcloud",
            "Scaleway",
        ),
        first=(
            "We host everything on {value}.",
            "Our production runs in {value}.",
            "The team deploys to {value}.",
        ),
        change=(
            "We moved production from {old} to {new}.",
            "Our infrastructure is on {new} now.",
            "Finance pushed us off {old}; we deploy to {new} instead.",
        ),
        current_cue=(
            "Which cloud does the team host on now?",
            "Where does the team's production currently run?",
            "Is the team still hosted on {old}?",
        ),
        current_plain=(
            "Which cloud does the team use?",
            "Where does the team deploy?",
        ),
        past=(
            "Which cloud did the team use before {next}?",
            "Where did production run before the move to {next}?",
        ),
        forget=(
            "Please forget where we host our services.",
            "Forget what I said about {value}.",
        ),
        near=(
            "{other} sent us a pile of free credits.",
            "A friend's startup runs on {other}.",
            "The conference keynote was by someone from {other}.",
        ),
    ),
    FactTemplate(
        kind="manager",
        subject="user",
        values=(
            "Karen",
            "Raj",
            "Olivia",
            "Tom",
            "Mei",
            "Carlos",
            "Fatima",
            "Ben",
            "Sofia",
            "Hiro",
            "Grace",
            "Ivan",
        ),
        first=(
            "My manager is {value}.",
            "I report to {value}, who is great.",
            "{value}, my manager, approved my vacation.",
        ),
        change=(
            "I have a new manager, {new}.",
            "After the reorg I report to {new} instead of {old}.",
            "{old} left the company, so {new} is my manager now.",
        ),
        current_cue=(
            "Who does the user report to now?",
            "Who is the user's manager currently?",
            "Does the user still report to {old}?",
        ),
        current_plain=(
            "Who is the user's manager?",
            "Who does the user report to?",
        ),
        past=(
            "Who was the user's manager before {next}?",
            "Who did the user report to before {next}?",
        ),
        forget=(
            "Please forget who my manager is.",
            "Forget what I said about {value}.",
        ),
        near=(
            "{other} from the sales team is leaving.",
            "I had lunch with {other} from design.",
            "My friend's manager, {other}, sounds awful.",
        ),
    ),
    FactTemplate(
        kind="favourite_language",
        subject="user",
        values=(
            "Python",
            "Rust",
            "Go",
            "TypeScript",
            "Kotlin",
            "Haskell",
            "Elixir",
            "Ruby",
            "Swift",
            "Scala",
            "Clojure",
            "Java",
        ),
        first=(
            "My favourite programming language is {value}.",
            "I write {value} whenever I get the choice.",
            "{value} is the language I enjoy most.",
        ),
        change=(
            "I've fallen for {new}; it's my favourite language now.",
            "I prefer {new} over {old} lately.",
            "After the side project, {new} replaced {old} as my favourite language.",
        ),
        current_cue=(
            "What is the user's favourite programming language now?",
            "Which language does the user currently enjoy most?",
            "Is {old} still the user's favourite language?",
        ),
        current_plain=(
            "What is the user's favourite programming language?",
            "Which programming language does the user like best?",
        ),
        past=(
            "What was the user's favourite language before {next}?",
            "Which language did the user prefer before {next}?",
        ),
        forget=(
            "Please forget my favourite programming language.",
            "Forget that I like {value}.",
        ),
        near=(
            "The new service at work is written in {other}.",
            "I went to a {other} meetup last night.",
            "My intern only knows {other}.",
        ),
    ),
)
"""The kinds of fact a conversation changes (24)."""


CHAT_LINES: tuple[str, ...] = (
    "Can you remind me to call the plumber tomorrow?",
    "The weather has been awful all week.",
    "I watched the game last night, what a finish.",
    "What's a good recipe for banana bread?",
    "My laptop battery is dying faster than usual.",
    "Traffic was terrible on the way in.",
    "I need to renew my passport before the trip.",
    "Can you summarise the meeting notes from Tuesday?",
    "I'm thinking of learning to juggle, is that silly?",
    "These days I barely have time to cook.",
    "Now that it's spring I want to be outside more.",
    "My number one priority this week is the quarterly report.",
    "We moved the standup to 10 am.",
    "The team switched meeting rooms again.",
    "I'm currently fighting a cold, so I'm slow today.",
    "I live for Friday afternoons.",
    "The coffee machine on our floor is broken again.",
    "Remind me what the capital of Australia is?",
    "I finally cleaned out the garage.",
    "My kid's school play is on Thursday.",
    "Do you know a good way to fix a squeaky door?",
    "I slept terribly, the neighbours had a party.",
    "Our flight got delayed by three hours.",
    "I've been drinking way too much coffee lately.",
    "The new intern starts on Monday.",
    "Can you help me write a birthday message for my aunt?",
    "I still haven't replied to that email from legal.",
    "The power went out for an hour this morning.",
    "I'm trying to get to bed before eleven.",
    "We had a long retro about the release process.",
    "I signed up for a half marathon, wish me luck.",
    "What's the difference between a latte and a flat white?",
    "The printer is jammed again, of course.",
    "My plants keep dying, any tips?",
    "Right now I'm just trying to get through my inbox.",
    "I forgot my umbrella and got soaked.",
    "Our quarterly planning is next week.",
    "I need a gift idea for a coworker who likes tea.",
    "The elevator in our building is out of order.",
    "Today I learned that octopuses have three hearts.",
    "I keep forgetting to water the tomatoes.",
    "The deploy on Friday went smoothly.",
    "I'm at the moment stuck in a very long queue.",
    "Nowadays everyone seems to have a podcast.",
    "My grandmother turns ninety next month.",
    "The city is repaving our street all week.",
    "I booked a dentist appointment for Wednesday.",
    "We adopted a new sprint format this quarter.",
    "Can you suggest a board game for four people?",
    "The hotel wifi here is painfully slow.",
    "I'm going to try meal prepping on Sundays.",
    "I changed the wallpaper on my laptop.",
    "Our team lunch is at the Thai place on Friday.",
    "I finished the crossword in record time today.",
    "My sister is getting married in June.",
    "The heating in the office is broken.",
    "I need to back up my photos before the trip.",
    "We replaced the old projector in the conference room.",
    "I've been meaning to call my parents more often.",
    "There's a fire drill at two this afternoon.",
)
"""Unrelated chat turns; some carry the questions' cue words and verbs."""
