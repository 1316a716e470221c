"""Deterministic generator for the `text` group's input files (writes into files/text/ beside this script).

Everything here is invented. No network, no timestamps inside the files: the PDF creation date and the
docx core properties are fixed, and the docx zip entries get a fixed date so reruns give identical bytes.
"""
import datetime as dt
import io
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "text"
FIXED = dt.datetime(2024, 1, 1, 0, 0, 0, tzinfo=dt.timezone.utc)

# --------------------------------------------------------------------------------------------------
# A short story. Written without apostrophes, hyphens, digits or dashes so that "words" are unambiguous,
# and every sentence ends in . ! or ? (no quote closes the text).
STORY = """The Keeper of Greyhaven Light

Marta Vell had tended the lantern at Greyhaven Light for eleven winters. Every evening she climbed the iron stairs, trimmed the wick, and polished the glass until the lantern threw its beam far across the harbor. The fishermen in the harbor village trusted that beam more than they trusted the weather. Her only company was a scruffy brown dog named Biscuit, who slept at the foot of the stairs and barked at every gull.

One autumn night the sky turned the color of slate. The wind rose from the west and the first storm of the season rolled toward the coast. Marta watched the clouds gather and felt the tower tremble. She lit the lantern early and checked the oil twice. Biscuit paced by the door and whined.

By midnight the storm had swallowed the moon. Rain struck the windows like thrown gravel. Far out beyond the harbor, a small light blinked and vanished and blinked again. Marta pressed her face to the glass. It was a ship, and it was drifting toward the rocks!

She knew the channel into the harbor was narrow and crooked. Without a steady lantern the crew would never find it. Then the unthinkable happened. A gust tore open the upper hatch and the lantern flame shrank to a trembling blue bead. Marta shielded it with her coat and her bare hands. Would the flame survive? She did not have time to wonder.

She shouted for Biscuit, and the dog raced up the stairs with a spare wick in his mouth. Together they coaxed the lantern back to life. The beam swept out across the water once more, bright and steady against the storm.

Down in the channel, the captain of the Alder Queen saw the beam and turned hard to starboard. The ship groaned past the rocks with only a few yards to spare and slid into the calm water of the harbor. The crew cheered so loudly that the keeper heard them above the storm.

At dawn the storm had blown itself out. The captain climbed the hill with a basket of bread and a bottle of plum wine. He told the keeper that his crew owed their lives to her lantern. She laughed and pointed at Biscuit, who was asleep on a coil of rope. "Thank the dog," she said.

The village painted a small lantern on the bow of every boat that winter. Children still tell the story of the night the harbor almost lost a ship. Whenever a storm blows in from the west, the fishermen look up at the hill and find the lantern burning, patient and bright, above the dark harbor.
"""

# --------------------------------------------------------------------------------------------------
MINUTES = """# Minutes - Baltic Partners Coordination Meeting

Meeting no. 7 of the Baltic Partners network. Draft minutes, circulated for approval.

## Details

- **Date:** Thursday, 14 March 2024
- **Time:** 09:30 - 12:45 (EET)
- **Venue:** Hotel Aurora, Conference Room B, Narva mnt 7, Tallinn
- **Chair:** Ingrid Solberg
- **Minutes taken by:** Tomas Reyes

## Present

1. Ingrid Solberg (chair, Oslo office)
2. Tomas Reyes (secretary)
3. Aino Virtanen
4. Kaspar Ilves
5. Ruta Kalnina
6. Marek Nowak (joined remotely)
7. Leila Haddad
8. Jonas Berg (joined remotely)

## Apologies

- Sofia Marchetti
- Henrik Dahl

## Agenda

1. Welcome and approval of the minutes of meeting no. 6 (Vilnius, 18 January 2024)
2. Partner budget for 2024/25
3. Autumn summit logistics
4. Communications and press
5. Any other business

## Discussion

**1. Welcome.** The chair welcomed the partners to Tallinn and thanked Kaspar Ilves for arranging the venue.
The minutes of the Vilnius meeting were approved without changes.

**2. Partner budget.** Aino Virtanen presented the draft budget of EUR 184,000. Partners asked for a
separate line for translation costs. A revised version will be circulated before the end of the month.

**3. Autumn summit.** The summit will again take place at Hotel Aurora if the venue contract can be
renewed on the same terms. Ruta Kalnina noted that the hotel raised its room rates by 6 percent.

**4. Communications.** Leila Haddad will draft a joint press statement about the new data room.
Marek Nowak confirmed that the shared data room can be ready in early April.

**5. AOB.** Jonas Berg proposed moving the newsletter to a quarterly rhythm; agreed.

## Action items

| # | Action | Owner | Due |
|---|--------|-------|-----|
| 1 | Circulate the revised partner budget | Aino Virtanen | 29 March 2024 |
| 2 | Renew the venue contract for the autumn summit | Tomas Reyes | 12 April 2024 |
| 3 | Draft the joint press statement | Leila Haddad | 22 March 2024 |
| 4 | Collect quotes for the translation budget line | Tomas Reyes | 26 April 2024 |
| 5 | Set up the shared data room | Marek Nowak | 5 April 2024 |
| 6 | Propose a newsletter calendar | Jonas Berg | 19 April 2024 |

## Next meeting

Meeting no. 8 will be hosted by the Riga partners on Thursday, 9 May 2024, at the Latvian National Library.

*Minutes approved by the chair: pending.*
"""

# --------------------------------------------------------------------------------------------------
INBOX = """===== Exported mailbox: partnerships@fjordline.io =====
Export generated by MailVault 2.4 (5 messages). Replies to this export are not monitored.

----- Message 1 -----
From: Maria Lopez <Maria.Lopez@Fjordline.io>
To: partnerships@fjordline.io
Cc: j.smith+invoices@example.org, "Ops Team" <ops-team@harbor-logistics.co.uk>
Date: Mon, 4 Mar 2024 09:12:44 +0100
Subject: Q2 container schedule

Hi all,
please send the updated schedule to planning@harbor-logistics.co.uk before Friday.
If the booking portal fails again, contact support@norvale.com.
Thanks, Maria

----- Message 2 -----
From: James Smith <j.smith+invoices@example.org>
To: maria.lopez@fjordline.io
Cc: partnerships@fjordline.io
Date: Mon, 4 Mar 2024 11:40:02 +0000
Subject: RE: Q2 container schedule

Maria,
our new accounts contact is Priya Natarajan (priya.natarajan@example.org); please copy her from now on.
Her old address PRIYA.N@OLDMAIL.NET no longer works.
James

----- Message 3 -----
From: Ops Team <OPS-TEAM@harbor-logistics.co.uk>
To: Maria.Lopez@fjordline.io
Date: Tue, 5 Mar 2024 07:03:19 +0000
Subject: Schedule received

Received, thanks. Ping @channel on Slack or write to dispatch@harbor-logistics.co.uk for urgent changes.
Follow us: @harborlogistics

----- Message 4 -----
From: Norvale Support <support@norvale.com>
To: maria.lopez@fjordline.io
Date: Wed, 6 Mar 2024 16:55:10 +0200
Subject: Ticket #88213 - booking portal

Dear customer,
the portal outage is resolved. Status updates: status-page@norvale.com
Kind regards, Lauri (lauri.maki@norvale.com)

----- Message 5 -----
From: Priya Natarajan <priya.natarajan@example.org>
To: Maria.Lopez@Fjordline.io, partnerships@fjordline.io
Cc: j.smith+invoices@example.org
Date: Thu, 7 Mar 2024 10:21:37 +0000
Subject: Introduction

Hello Maria, nice to meet you. For invoices please use ap@example.org.
Best, Priya
"""

# --------------------------------------------------------------------------------------------------
PROJECT_LOG = """PROJECT LOG - Harbor Sensor Network (HSN)
Owner: K. Ilves. Note: dates written with slashes in this log are day/month/year.

[2024-01-08] Kick-off meeting held; scope v1.2 approved by the steering group.
[2024-01-15] Site survey at pier 4 completed. Follow-up survey scheduled for 22 January 2024.
[22/01/2024] Follow-up done. 14 sensors ordered (PO #4471), delivery expected Feb 9, 2024.
[2024-02-09] Delivery arrived at 14:30, two units damaged in transit.
[12/02/2024] Replacement request filed; supplier promised new units by 1 March 2024.
[2024-03-01] Replacements received. Firmware 3.10.2 flashed on all units.
[05/03/2024] Installation started on piers 2-6. Target go-live: March 28, 2024.
[2024-03-28] Go-live postponed to 04/04/2024 because of storm warnings.
[04/04/2024] Network live, 14/14 sensors reporting. Next review on 2024-06-03.
"""

# --------------------------------------------------------------------------------------------------
NOVEL_TITLE = """THE SALT ROAD
A novel in progress by Odile Marsh
Draft three. Not for circulation.
"""

CHAPTERS = [
    ("Chapter 1: The Ferry", """The ferry left the mainland an hour before dawn. Ilse stood at the rail with her satchel pressed against her ribs and watched the lamps of the port shrink to a row of sparks. Her uncle had written only one line in his last letter. Come to Vesk before the salt freezes. She did not know what it meant, but she had sold her loom to buy the ticket.

The deck smelled of tar and wet wool. A boy selling roasted chestnuts walked between the passengers, and an old woman with a cage of hens sang under her breath. When the sun finally rose, the sea turned from black to pewter. Far ahead, a grey smudge of land lay across the horizon like a sleeping animal. That was the island, and somewhere on it was the road her uncle had walked all his life."""),
    ("Chapter 2: The Inn at Vesk", """The inn at Vesk was the only building in the harbor with a lit window. Ilse pushed open the heavy door and a wave of warm air and pipe smoke rolled over her. The innkeeper, a broad man called Aurel, looked at her muddy boots and then at her face.

You have his eyes, he said quietly, and he poured her a bowl of fish soup without asking for coins. He told her that her uncle had left three weeks ago with two mules and a sledge, heading inland toward the salt flats. Nobody had seen him since. Aurel gave her a narrow room under the roof, where the wind whistled through the shutters all night. Before she slept, Ilse unfolded the letter again and noticed, for the first time, a tiny map drawn in the corner."""),
    ("Chapter 3: Salt and Silver", """In the morning the harbor was loud with gulls and the clatter of carts. Ilse showed the tiny map to every trader she met, but most of them shrugged and turned away. At last a woman selling dried herbs tapped the paper with a crooked finger. That is the old salt road, she said. It runs from the cliffs to the flats, and nobody uses it since the silver mine closed.

The herb seller explained that the salt merchants once carried silver coins hidden inside blocks of salt, so that bandits would not find them. The blocks were marked with a small star pressed into the crust. When the mine closed, the merchants vanished, but people said that some of the marked blocks were never collected. Her uncle had spent years searching for them, and many people in Vesk thought he was a fool.

Ilse bought a lantern, a coil of rope, a bag of oats and a thick wool blanket. She hired the last mule in the stable, a stubborn grey animal with one torn ear, and the stable boy named it Pepper before she could object. By noon she was climbing the cliff path above the town. The wind tugged at her scarf and the sea glittered far below.

Halfway up the cliff she found the first sign of her uncle. A block of salt lay wedged between two stones, cracked open, and pressed into its crust was a small star. The block was empty. Someone had already taken the silver, and the marks in the dust were fresh. Ilse knelt, touched the broken crust, and understood that she was not the only one following the salt road."""),
    ("Chapter 4: The Night Market", """The road brought her to a crossroads village where a night market was setting up under strings of paper lamps. Traders sold knives, honey, blankets and tin charms shaped like stars. Ilse tied Pepper to a post and walked slowly between the stalls, listening.

At a stall selling maps she saw a copy of the tiny map from her letter, drawn in the same careful hand. The trader said a tall man with a scar across his chin had sold it to him two days ago. He was asking about a woman traveling alone, the trader added, and he did not look like a friend. Ilse paid for the map with her last silver coin and left the market before the lamps burned out."""),
    ("Chapter 5: Crossing the Flats", """At dawn the salt flats opened in front of her, white and silent and endless. Every step of the mule broke the crust with a sound like snapping bread. Ilse followed the line of old cairns that marked the road, counting them under her breath.

Near the ninth cairn she saw a thin column of smoke. Behind a low ridge of salt stood a tent, two mules, and a sledge loaded with pale blocks. A thin figure in a patched coat was bending over a fire. When he straightened and turned toward her, Ilse dropped the reins. It was her uncle, older and greyer, but alive, and he was smiling as if he had expected her all along."""),
]

# --------------------------------------------------------------------------------------------------
# (review id, product, reviewer, rating, date, text)
REVIEWS = [
    ("R-001", "TrailBuds Wireless Earbuds", "kestrel_runner", 4, "2024-03-02",
     "Great fit for running. The battery easily lasts my long Sunday runs, though the case feels a bit cheap."),
    ("R-002", "VoltGo Power Bank", "mira.k", 5, "2024-03-03",
     "Charged my phone three times on a weekend hike. Solid build and the display is handy."),
    ("R-003", "Lumo Desk Lamp", "desk_goblin", 3, "2024-03-04",
     "Nice warm light, but the touch dimmer is too sensitive and flickers at the lowest setting."),
    ("R-004", "AeroBlend Pro Blender", "chef_tomas", 5, "2024-03-05",
     "Crushes ice in seconds. Smoothies are silky and the jug is easy to clean."),
    ("R-005", "TrailBuds Wireless Earbuds", "ana_p", 5, "2024-03-06",
     "Battery life is excellent and the sound is clear. Pairing took five seconds."),
    ("R-006", "VoltGo Power Bank", "jonas_b", 4, "2024-03-07",
     "Heavier than expected, but the battery capacity is honest and it charges my laptop."),
    ("R-007", "AeroBlend Pro Blender", "liv_eats", 4, "2024-03-08",
     "Powerful motor. It is loud, so no early morning smoothies while the kids sleep."),
    ("R-008", "Lumo Desk Lamp", "night_owl", 2, "2024-03-09",
     "The cordless mode is a gimmick: the battery dies after two hours of reading."),
    ("R-009", "TrailBuds Wireless Earbuds", "gym_rat_99", 3, "2024-03-10",
     "Sound is fine, but the left bud keeps disconnecting in my gym."),
    ("R-010", "VoltGo Power Bank", "travel_tess", 5, "2024-03-11",
     "Took it on three flights, no problems at security. Fast charging works as advertised."),
    ("R-011", "AeroBlend Pro Blender", "grandma_rose", 4, "2024-03-12",
     "Does everything I need. The recipe booklet is a nice bonus."),
    ("R-012", "Lumo Desk Lamp", "studio_ben", 4, "2024-03-13",
     "Clean design and the colour temperature slider is great for drawing."),
    ("R-013", "TrailBuds Wireless Earbuds", "quietcommuter", 4, "2024-03-14",
     "Noise isolation is decent on the train. BATTERY gets me through a full work day."),
    ("R-014", "VoltGo Power Bank", "dad_of_three", 5, "2024-03-15",
     "Kept two tablets alive on a long car trip. The kids fought over it."),
    ("R-015", "AeroBlend Pro Blender", "broken_jug", 2, "2024-03-16",
     "The jug cracked after a month. Customer service replaced it, but slowly."),
    ("R-016", "TrailBuds Wireless Earbuds", "podcast_pete", 2, "2024-03-17",
     "After a software update the battery drains overnight even in the case."),
    ("R-017", "Lumo Desk Lamp", "late_shift", 3, "2024-03-18",
     "Bright enough, but the base wobbles on my desk."),
    ("R-018", "VoltGo Power Bank", "campfire_kim", 3, "2024-03-19",
     "Works, but the battery took almost six hours to recharge from empty."),
    ("R-019", "AeroBlend Pro Blender", "soup_season", 5, "2024-03-20",
     "Hot soup mode is brilliant. Best kitchen purchase this year."),
    ("R-020", "TrailBuds Wireless Earbuds", "bass_head", 5, "2024-03-21",
     "Deep bass, comfortable tips, and the charging case is tiny."),
    ("R-021", "Lumo Desk Lamp", "return_it", 1, "2024-03-22",
     "Arrived with a dead pixel in the touch panel and stopped turning on after a week."),
    ("R-022", "VoltGo Power Bank", "hiker_hanna", 4, "2024-03-23",
     "Battery indicator is accurate and it survived a rainy week in the mountains."),
    ("R-023", "AeroBlend Pro Blender", "kitchen_novice", 3, "2024-03-24",
     "Good blender, but the lid is hard to lock in place."),
    ("R-024", "TrailBuds Wireless Earbuds", "marathon_mo", 4, "2024-03-25",
     "Stayed in during a full marathon. Battery was at 20 percent at the finish."),
]

# --------------------------------------------------------------------------------------------------
TEA_ZH = """茶的故事

中国是茶的故乡。相传神农氏尝百草，日遇七十二毒，得茶而解之。从那以后，人们便开始认识茶、种植茶。

唐代的陆羽写下了《茶经》，这是世界上第一部关于茶的专著。书中记录了采茶、制茶、煮茶和饮茶的方法。到了宋代，点茶和斗茶在文人之间非常流行。

今天，中国有六大茶类：绿茶、白茶、黄茶、青茶、红茶和黑茶。杭州的西湖龙井（Longjing）是最有名的绿茶之一，每年3月下旬到4月初是采摘的好时节。

泡一杯好茶，水温很重要。绿茶适合用80度左右的水，红茶则可以用沸水。慢慢品味，茶香会在口中停留很久。
"""

# --------------------------------------------------------------------------------------------------
NEWS = """# Weekly Digest - Port Ellery Courier

---

## Water levels fall at Marrow Hill

The Marrow Hill reservoir is at its lowest level in ten summers. Engineers say the reservoir lost almost a third of its volume since May.
The council asked residents to water gardens only in the evening. A spokesperson said the reservoir supplies about forty thousand homes.
If the dry weather continues, the reservoir may need emergency pumping from the river. Anglers have already noticed old fence posts
appearing along the reservoir shore. Officials will publish reservoir readings every Friday.

---

## New tram line opens to the harbor

The first tram on the new harbor line left the central station on Monday morning. Commuters queued for an hour to ride the tram,
and the mayor rang the bell herself. The line has nine stops and the tram runs every eight minutes at peak time.
Shop owners near the harbor hope the tram will bring more visitors. A night tram service will start in the spring.

---

## Apple harvest arrives early

Growers across the valley started picking two weeks early this year. At the Lindqvist orchard the crop is heavy and the fruit is sweet.
Visitors can pick their own apples at the orchard on weekends. The owner said the orchard employs twelve seasonal workers this autumn.
A cider festival will be held at the orchard in October, and a second orchard nearby will open its barn for tastings.

---

## Library extends opening hours

The central library will stay open until nine in the evening from next month. The library board said students had asked for more quiet study space.
A new reading room for teenagers opens on the second floor, and the library will lend laptops for the first time.
Volunteers are needed to run homework clubs. Membership of the library is free for all residents.
"""

# --------------------------------------------------------------------------------------------------
PRESS_PARAS = [
    ("FOR IMMEDIATE RELEASE", None),
    ("Norvale Systems and Brightwater Labs form joint venture for coastal water sensing", "Title"),
    ("TAMPERE, Finland, 2 October 2024. Norvale Systems, the Tampere-based maker of marine sensors, and Brightwater Labs, "
     "a water-quality analytics firm headquartered in Cork, Ireland, today announced a joint venture called ClearTide "
     "to monitor harbors and estuaries across northern Europe.", None),
    ("The sensors will be assembled under contract by Kestrel Dynamics at its plant in Graz, Austria, starting in the first "
     "quarter of 2025. Legal advice on the agreement was provided by Halvorsen & Pike, a law firm based in Bergen, Norway.", None),
    ("\"Clean water data should be as easy to read as a weather forecast,\" said Anneli Koskinen, chief executive of Norvale "
     "Systems. Dr. Cathal Byrne, founder of Brightwater Labs, added that the first pilot will cover the port of Rotterdam.", None),
    ("ClearTide will employ 40 people initially. Financial terms were not disclosed.", None),
    ("Media contact: press@cleartide.example, +358 40 555 0142", None),
]

# --------------------------------------------------------------------------------------------------
POLICY_ROLES = [
    ("Engineering", "3", "Tuesday and Thursday in the office"),
    ("Data Science", "3", "Tuesday and Thursday in the office"),
    ("Design", "4", "Studio day on Wednesday"),
    ("Sales", "2", "Client visits count as office days"),
    ("Customer Support", "1", "Shift rota set by team lead"),
    ("Finance", "2", "Office presence required at month end"),
]

# Q2 and Q3 revenue by region (EUR), headcount by department (30 June, 30 September)
REGIONS = [("North", 1240000, 1302000), ("South", 980000, 1107400), ("East", 1510000, 1570400),
           ("West", 760000, 881600), ("Central", 1105000, 1149200)]
HEADCOUNT = [("Retail", 208, 214), ("Logistics", 90, 96), ("Design", 29, 31), ("Corporate", 57, 58), ("Online", 41, 47)]


def normalized_zip(data: bytes) -> bytes:
    """Rewrite a zip (docx) with fixed entry dates so the bytes do not depend on when it was made."""
    src = zipfile.ZipFile(io.BytesIO(data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            new = zipfile.ZipInfo(info.filename, date_time=(2024, 1, 1, 0, 0, 0))
            new.compress_type = zipfile.ZIP_DEFLATED
            new.external_attr = 0o644 << 16
            dst.writestr(new, src.read(info.filename))
    return buf.getvalue()


def save_docx(document, path: Path) -> None:
    props = document.core_properties
    props.created = FIXED.replace(tzinfo=None)
    props.modified = FIXED.replace(tzinfo=None)
    props.last_printed = FIXED.replace(tzinfo=None)
    props.author = "Text suite generator"
    props.last_modified_by = "Text suite generator"
    props.revision = 1
    buf = io.BytesIO()
    document.save(buf)
    path.write_bytes(normalized_zip(buf.getvalue()))


def make_policy(path: Path) -> None:
    from docx import Document

    doc = Document()
    doc.add_heading("Remote Work Policy", level=0)
    doc.add_paragraph("Version 3.1, effective 1 September 2024. Owner: People Operations.")
    doc.add_heading("1. Purpose", level=1)
    doc.add_paragraph("This policy explains when and how employees may work away from the office while keeping "
                      "teams connected and customer commitments intact.")
    doc.add_heading("2. Eligibility", level=1)
    doc.add_paragraph("All permanent employees who have completed their probation period may apply. Interns and "
                      "contractors are covered by separate agreements.")
    doc.add_heading("3. Remote days by role", level=1)
    doc.add_paragraph("The maximum number of remote days per week depends on the role, as shown in the table below.")
    table = doc.add_table(rows=1, cols=3)
    table.style = "Table Grid"
    for cell, text in zip(table.rows[0].cells, ("Role", "Remote days per week", "Notes")):
        cell.text = text
    for role in POLICY_ROLES:
        row = table.add_row()
        for cell, text in zip(row.cells, role):
            cell.text = text
    doc.add_paragraph("Team leads may approve exceptions for up to four weeks in a calendar year.")
    doc.add_heading("4. Equipment and allowances", level=1)
    doc.add_paragraph("Each eligible employee receives a one-time equipment stipend of EUR 450 for a chair, desk or "
                      "monitor, plus a monthly internet allowance of EUR 30. Receipts must be submitted within 60 days.")
    doc.add_heading("5. Core hours", level=1)
    doc.add_paragraph("Everyone must be reachable between 10:00 and 15:00 local time, whether at home or in the office.")
    doc.add_heading("6. Security", level=1)
    doc.add_paragraph("Company laptops must use the VPN on any network outside the office. Printed customer data must "
                      "never leave the office.")
    save_docx(doc, path)


def make_press(path: Path) -> None:
    from docx import Document

    doc = Document()
    for text, style in PRESS_PARAS:
        if style == "Title":
            doc.add_heading(text, level=1)
        else:
            doc.add_paragraph(text)
    save_docx(doc, path)


def make_report(path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_creation_date(FIXED)
    pdf.set_title("Northwind Coastal Outfitters - Quarterly Report Q3 2024")
    pdf.set_author("Northwind Coastal Outfitters")
    pdf.set_auto_page_break(auto=False)

    def heading(text):
        pdf.set_font("Helvetica", "B", 14)
        pdf.cell(0, 10, text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)

    def para(text):
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)

    def table(header, rows, widths):
        pdf.set_font("Helvetica", "B", 10)
        for text, width in zip(header, widths):
            pdf.cell(width, 8, text, border=1)
        pdf.ln(8)
        pdf.set_font("Helvetica", "", 10)
        for row in rows:
            for i, (text, width) in enumerate(zip(row, widths)):
                pdf.cell(width, 8, text, border=1, align="L" if i == 0 else "R")
            pdf.ln(8)
        pdf.ln(4)

    # page 1
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 18)
    pdf.cell(0, 12, "Northwind Coastal Outfitters", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 13)
    pdf.cell(0, 8, "Quarterly Report - Q3 2024 (July to September)", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(6)
    heading("Contents")
    pdf.set_font("Helvetica", "", 11)
    for name, page in (("Executive Summary", 1), ("Regional Performance", 2), ("Workforce", 3),
                       ("Risk Factors", 3), ("Outlook and Contact", 4)):
        pdf.cell(150, 7, name)
        pdf.cell(0, 7, str(page), align="R", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(6)
    heading("Executive Summary")
    para("Revenue grew in every region in the third quarter, helped by a late summer and strong demand for waterproof "
         "outerwear. Online orders continued to gain share, while the new distribution hub in Aarhus reduced delivery "
         "times by almost a day. Gross margin was stable at 41 percent.")
    para("The board approved two new stores for 2025 and a modest increase in the seasonal workforce. Details by "
         "region and by department follow on the next pages.")

    # page 2
    pdf.add_page()
    heading("Regional Performance")
    para("The table shows net revenue by region in euros for the second and third quarters of 2024.")
    table(("Region", "Q2 2024 revenue (EUR)", "Q3 2024 revenue (EUR)"),
          [(r, f"{q2:,}", f"{q3:,}") for r, q2, q3 in REGIONS], (50, 65, 65))
    para("South added the most revenue in absolute terms thanks to the reopened flagship store in Porto. East remains "
         "the largest region. Central and North grew in line with the market.")

    # page 3
    pdf.add_page()
    heading("Workforce")
    para("Headcount by department at the end of the second and third quarters (full-time equivalents, rounded).")
    table(("Department", "Headcount 30 Jun", "Headcount 30 Sep"),
          [(d, str(a), str(b)) for d, a, b in HEADCOUNT], (60, 55, 55))
    heading("Risk Factors")
    para("1. Weather: a mild autumn would reduce demand for insulated jackets, our highest-margin category.")
    para("2. Freight costs: container rates from Asia rose 18 percent during the quarter and may rise further.")
    para("3. Currency: about a third of purchasing is in US dollars, while most sales are in euros.")

    # page 4
    pdf.add_page()
    heading("Outlook and Contact")
    para("For the fourth quarter we expect revenue growth of 3 to 5 percent, with the holiday season weighted towards "
         "online sales.")
    para("Investor relations: Elin Strand, ir@northwind-coastal.example, telephone +45 70 20 30 40.")
    pdf.output(str(path))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for bad in ("'", "-", "\u2014", "\u2013"):
        assert bad not in STORY, f"story contains {bad!r}"
    assert not any(ch.isdigit() for ch in STORY)
    (OUT / "lighthouse_story.txt").write_text(STORY, encoding="utf-8")
    (OUT / "meeting_minutes.md").write_text(MINUTES, encoding="utf-8")
    (OUT / "inbox_export.txt").write_text(INBOX, encoding="utf-8")
    (OUT / "project_log.txt").write_text(PROJECT_LOG, encoding="utf-8")
    novel = NOVEL_TITLE + "\n\n" + "\n\n\n".join(f"{head}\n\n{body}" for head, body in CHAPTERS) + "\n"
    (OUT / "the_salt_road.txt").write_text(novel, encoding="utf-8")
    lines = ["PRODUCT REVIEWS EXPORT - Spring 2024",
             "Each review lists the product, the reviewer, the star rating out of 5, the date and the review text.",
             ""]
    for rid, product, reviewer, rating, date, text in REVIEWS:
        lines += ["-" * 50, f"Review ID: {rid}", f"Product: {product}", f"Reviewer: {reviewer}",
                  f"Rating: {rating}/5", f"Date: {date}", text, ""]
    (OUT / "product_reviews.txt").write_text("\n".join(lines), encoding="utf-8")
    (OUT / "tea_essay_zh.txt").write_text(TEA_ZH, encoding="utf-8")
    (OUT / "news_digest.md").write_text(NEWS, encoding="utf-8")
    make_policy(OUT / "remote_work_policy.docx")
    make_press(OUT / "press_release.docx")
    make_report(OUT / "q3_report.pdf")


if __name__ == "__main__":
    main()
